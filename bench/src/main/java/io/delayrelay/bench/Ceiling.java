package io.delayrelay.bench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.delayrelay.api.RelayHeaders;

/**
 * The ceiling: the same messages published from memory straight to the exchange, persistent, with the same headers
 * the relay sets, each publisher thread waiting for the confirms of every batch (as the relay does).
 */
final class Ceiling {

    private Ceiling() {}

    /** Publishes every body and returns once all are confirmed (the caller measures queue depth). */
    static void publish(Infra infra, String exchange, List<byte[]> bodies, int threads, int batch) throws Exception {
        try (Connection connection = infra.amqpFactory().newConnection("relay-bench-ceiling")) {
            List<Thread> workers = new ArrayList<>();
            List<Exception> failures = new ArrayList<>();
            int per = (bodies.size() + threads - 1) / threads;
            for (int t = 0; t < threads; t++) {
                List<byte[]> part =
                        bodies.subList(Math.min(bodies.size(), t * per), Math.min(bodies.size(), (t + 1) * per));
                Thread worker = new Thread(
                        () -> {
                            try (Channel channel = connection.createChannel()) {
                                channel.confirmSelect();
                                int inBatch = 0;
                                for (byte[] body : part) {
                                    channel.basicPublish(exchange, "due", true, properties(body), body);
                                    if (++inBatch == batch) {
                                        channel.waitForConfirmsOrDie(TimeUnit.SECONDS.toMillis(30));
                                        inBatch = 0;
                                    }
                                }
                                channel.waitForConfirmsOrDie(TimeUnit.SECONDS.toMillis(30));
                            } catch (Exception e) {
                                synchronized (failures) {
                                    failures.add(e);
                                }
                            }
                        },
                        "ceiling-" + t);
                workers.add(worker);
                worker.start();
            }
            for (Thread w : workers) {
                w.join();
            }
            if (!failures.isEmpty()) {
                throw failures.get(0);
            }
        }
    }

    private static AMQP.BasicProperties properties(byte[] body) {
        Map<String, Object> headers = new HashMap<>();
        long due = Messages.dueOf(body);
        headers.put(RelayHeaders.BUSINESS, "ceiling");
        headers.put(RelayHeaders.DUE_AT, due);
        headers.put(RelayHeaders.RELAYED_AT, System.currentTimeMillis());
        headers.put(RelayHeaders.SHARD, 0);
        headers.put(RelayHeaders.ATTEMPT, 1);
        return new AMQP.BasicProperties.Builder()
                .deliveryMode(2)
                .contentType("application/octet-stream")
                .messageId(UUID.randomUUID().toString())
                .headers(headers)
                .build();
    }
}
