package io.delayrelay.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

import com.rabbitmq.client.Channel;

/**
 * Samples the RSS of every local beam.smp (RabbitMQ) and the storm queue's depth (on its own channel) every 200
 * ms and keeps the peaks.
 */
final class BrokerSampler {
    private final AtomicLong peak = new AtomicLong(-1);
    private final AtomicLong queuePeak = new AtomicLong(0);
    private final Channel channel;
    private final String queue;
    private volatile Thread thread;

    BrokerSampler(Channel channel, String queue) {
        this.channel = channel;
        this.queue = queue;
    }

    void start() {
        Thread t = new Thread(
                () -> {
                    while (!Thread.currentThread().isInterrupted()) {
                        long rss = brokerRss();
                        peak.accumulateAndGet(rss, Math::max);
                        try {
                            long depth = channel.queueDeclarePassive(queue).getMessageCount();
                            queuePeak.accumulateAndGet(depth, Math::max);
                        } catch (IOException | RuntimeException e) {
                            // not sampled this time
                        }
                        try {
                            Thread.sleep(200);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "storm-broker-rss");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    void stop() throws InterruptedException {
        Thread t = thread;
        if (t != null) {
            t.interrupt();
            t.join();
            thread = null;
        }
    }

    long peak() {
        return peak.get();
    }

    long queuePeak() {
        return queuePeak.get();
    }
    /** Sum of VmRSS of every local beam.smp in bytes, -1 when none is visible. */
    static long brokerRss() {
        long[] sum = {0};
        boolean[] found = {false};
        ProcessHandle.allProcesses()
                .filter(p ->
                        p.info().command().map(c -> c.endsWith("/beam.smp")).orElse(false))
                .forEach(p -> {
                    try {
                        for (String line : Files.readAllLines(
                                Path.of("/proc", Long.toString(p.pid()), "status"), StandardCharsets.UTF_8)) {
                            if (line.startsWith("VmRSS:")) {
                                sum[0] += Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                                found[0] = true;
                            }
                        }
                    } catch (IOException | RuntimeException e) {
                        // gone
                    }
                });
        return found[0] ? sum[0] : -1;
    }
}
