package com.example.peer;

/** A second interface, so one application exports more than one service (application-level discovery). */
public interface EchoService {
    String echo(String s);

    /** Who answered, as DemoService#whoAmI. */
    String whoAmI();
}
