package oracle.pojo;

/** An enum for the Hessian operations. */
public enum Color {
    RED,
    GREEN,
    BLUE
}
