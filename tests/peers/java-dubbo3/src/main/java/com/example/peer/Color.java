package com.example.peer;

/** An enum argument and result (Hessian sends it as an object with its constant's name). */
public enum Color {
    RED, GREEN, BLUE;

    /** The next constant, wrapping around. */
    public Color next() {
        return values()[(ordinal() + 1) % values().length];
    }
}
