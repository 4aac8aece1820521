package com.example.peer;

/** The provider side of {@link EchoService}. */
public class EchoServiceImpl implements EchoService {
    @Override
    public String echo(String s) {
        return s;
    }

    @Override
    public String whoAmI() {
        return Identity.describe();
    }
}
