package com.example.peer;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;

import org.apache.dubbo.rpc.RpcContext;

/** The provider side of {@link DemoService}. */
public class DemoServiceImpl implements DemoService {
    private static final Executor ASYNC = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "demo-async");
        t.setDaemon(true);
        return t;
    });

    private volatile String recorded;

    @Override
    public String sayHello(String name) {
        return "Hello " + name;
    }

    @Override
    public String echoString(String s) {
        return s;
    }

    @Override
    public int addInt(int a, int b) {
        return a + b;
    }

    @Override
    public long addLong(long a, long b) {
        return a + b;
    }

    @Override
    public double addDouble(double a, double b) {
        return a + b;
    }

    @Override
    public float addFloat(float a, float b) {
        return a + b;
    }

    @Override
    public String doubleBits(double d) {
        return Long.toHexString(Double.doubleToRawLongBits(d));
    }

    @Override
    public String floatBits(float f) {
        return Integer.toHexString(Float.floatToRawIntBits(f));
    }

    @Override
    public BigDecimal addDecimal(BigDecimal a, BigDecimal b) {
        return a.add(b);
    }

    @Override
    public boolean invert(boolean b) {
        return !b;
    }

    @Override
    public byte[] echoBytes(byte[] b) {
        return b;
    }

    @Override
    public Date echoDate(Date d) {
        return d;
    }

    @Override
    public User getUser(String name) {
        User u = new User(name, 42);
        u.setScore(97.5);
        u.setTags(Arrays.asList("a", "b"));
        Map<String, String> attrs = new LinkedHashMap<>();
        attrs.put("k", "v");
        u.setAttrs(attrs);
        u.setColor(Color.GREEN);
        u.setBalance(new BigDecimal("12345678901234567890.123456789"));
        return u;
    }

    @Override
    public User echoUser(User u) {
        return u;
    }

    @Override
    public List<User> listUsers(int n) {
        List<User> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new User("user" + i, i));
        }
        return out;
    }

    @Override
    public List<String> echoList(List<String> items) {
        return items;
    }

    @Override
    public Map<String, Integer> echoMap(Map<String, Integer> m) {
        return m;
    }

    @Override
    public Color echoColor(Color c) {
        return c;
    }

    @Override
    public Color nextColor(Color c) {
        return c.next();
    }

    @Override
    public String describe(String s) {
        return "string:" + s;
    }

    @Override
    public String describe(long n) {
        return "long:" + n;
    }

    @Override
    public Object echoObject(Object o) {
        return o;
    }

    @Override
    public void record(String what) {
        recorded = what;
    }

    @Override
    public String lastRecorded() {
        return recorded;
    }

    @Override
    public String fail(String message) throws DemoException {
        throw new DemoException(message, "E42");
    }

    @Override
    public String failRuntime(String message) {
        throw new IllegalStateException(message);
    }

    @Override
    public CompletableFuture<String> sayHelloAsync(String name) {
        return CompletableFuture.supplyAsync(() -> "Hello " + name + " (async)", ASYNC);
    }

    @Override
    public Map<String, String> echoAttachments() {
        Map<String, String> seen = Identity.attachments();
        for (Map.Entry<String, String> e : seen.entrySet()) {
            RpcContext.getServerResponseContext().setAttachment("echo-" + e.getKey(), e.getValue());
        }
        return seen;
    }

    @Override
    public Map<String, Object> traceContext() {
        return TraceProbe.current();
    }

    @Override
    public String sleep(int millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "slept " + millis;
    }

    @Override
    public String whoAmI() {
        return Identity.describe();
    }
}
