package com.example.peer.greet;

/** The exact bits of a request's floating-point fields as the provider decoded them. */
public final class GreetBits {
    private GreetBits() {}

    /** {@code "<ratio's raw long bits in hex> <share's raw int bits in hex>"}. */
    public static String of(GreetRequest request) {
        return Long.toHexString(Double.doubleToRawLongBits(request.getRatio())) + " "
                + Integer.toHexString(Float.floatToRawIntBits(request.getShare()));
    }
}
