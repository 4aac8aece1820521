package com.example.peer;

/** The business exception DemoService#fail declares (checked, so Dubbo returns it to the consumer as is). */
public class DemoException extends Exception {
    private static final long serialVersionUID = 1L;

    private String code;

    public DemoException() {}

    public DemoException(String message, String code) {
        super(message);
        this.code = code;
    }

    public String getCode() { return code; }
}
