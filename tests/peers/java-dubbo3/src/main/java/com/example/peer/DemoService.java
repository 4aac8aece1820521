package com.example.peer;

import java.math.BigDecimal;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The demo service of the real Dubbo 3.3 peers (wrapper mode over Triple, Hessian2 over Dubbo2).
 * The dubbo-go peer implements the same interface name and as many of these methods as it can.
 */
public interface DemoService {
    String sayHello(String name);

    String echoString(String s);

    int addInt(int a, int b);

    long addLong(long a, long b);

    double addDouble(double a, double b);

    float addFloat(float a, float b);

    /** The exact bits the provider received: {@code Long.toHexString(Double.doubleToRawLongBits(d))}. */
    String doubleBits(double d);

    /** The exact bits the provider received: {@code Integer.toHexString(Float.floatToRawIntBits(f))}. */
    String floatBits(float f);

    BigDecimal addDecimal(BigDecimal a, BigDecimal b);

    boolean invert(boolean b);

    byte[] echoBytes(byte[] b);

    Date echoDate(Date d);

    User getUser(String name);

    User echoUser(User u);

    List<User> listUsers(int n);

    List<String> echoList(List<String> items);

    Map<String, Integer> echoMap(Map<String, Integer> m);

    Color echoColor(Color c);

    Color nextColor(Color c);

    /** Overloaded by parameter type: the call's argument types choose. */
    String describe(String s);

    String describe(long n);

    Object echoObject(Object o);

    /** A void method: remembers its argument for {@link #lastRecorded()}. */
    void record(String what);

    String lastRecorded();

    /** Throws the declared business exception with this message and code "E42". */
    String fail(String message) throws DemoException;

    /** Throws an IllegalStateException (a JDK runtime exception, returned as is by Dubbo). */
    String failRuntime(String message);

    /** Answers "Hello NAME (async)" from another thread. */
    CompletableFuture<String> sayHelloAsync(String name);

    /** The call's attachments as the provider saw them; each is also sent back as response attachment "echo-KEY". */
    Map<String, String> echoAttachments();

    /**
     * What Dubbo's tracing (provider run with --tracing) made of this call: {@code trace_id}, {@code span_id},
     * {@code parent_id}, {@code sampled} of the server span, and the raw {@code traceparent}/{@code tracestate}
     * attachments. Also logged on stderr as {@code TRACE <json>}.
     */
    Map<String, Object> traceContext();

    /** Sleeps, then answers "slept MILLIS". */
    String sleep(int millis);

    /** Who answered: "APPLICATION@PROTOCOL://HOST:PORT" plus the instance's tag, if any. */
    String whoAmI();
}
