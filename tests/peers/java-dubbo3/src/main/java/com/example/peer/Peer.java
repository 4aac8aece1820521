package com.example.peer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Process set-up shared by the provider and the consumer. */
final class Peer {
    private Peer() {}

    /**
     * Must run first in main, before any Dubbo or logging class loads: loopback registration, quiet logs,
     * a short shutdown.
     */
    static void init() {
        // Dubbo refuses to register a loopback address unless no interface is left to scan.
        setDefault("dubbo.network.interface.ignored", ".*");
        setDefault("dubbo.service.shutdown.wait", "1000");
        setDefault("org.slf4j.simpleLogger.logFile", "System.err");
        setDefault("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        setDefault("org.slf4j.simpleLogger.showDateTime", "true");
        setDefault("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        // With every interface ignored, NetUtils logs a NullPointerException on every call.
        setDefault("org.slf4j.simpleLogger.log.org.apache.dubbo.common.utils.NetUtils", "off");
        // Curator's caches complain when Dubbo closes the client under them at exit.
        setDefault("org.slf4j.simpleLogger.log.org.apache.curator.framework.recipes.cache", "off");
        // Nacos client: logs to stderr through slf4j, no files in the user's home.
        setDefault("nacos.logging.default.config.enabled", "false");
        setDefault("JM.LOG.PATH", System.getProperty("java.io.tmpdir") + "/java-dubbo3-peer-nacos-logs");
        setDefault("JM.SNAPSHOT.PATH", System.getProperty("java.io.tmpdir") + "/java-dubbo3-peer-nacos-snapshot");
        setDefault("user.home.dubbo", System.getProperty("java.io.tmpdir"));
    }

    private static void setDefault(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    /** {@code port}, or a free 127.0.0.1 port when it is 0. */
    static int port(int port) throws IOException {
        if (port != 0) {
            return port;
        }
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Prints one line on stdout and flushes it (the test harness reads lines). */
    static void line(String text) {
        System.out.println(text);
        System.out.flush();
    }
}
