package io.delayrelay.app;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A producer in another language: plain redis-cli commands following the shell producer of examples/producers, no wake-up. */
class RawRedisProducerTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void entriesWrittenWithRedisCliZaddAreDeliveredWithinMaxIdle() throws Exception {
        String business = kit.business("raw");
        String exchange = kit.exchange("raw");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "max-idle", "200ms"));

        String shards =
                redisCli("HGET", "delayqueue:" + business + ":meta", "shards").trim();
        assertThat(shards).isEqualTo("16");
        List<String> messages = List.of("{\"orderId\":1}", "{\"orderId\":2}", "reminder user=42", "héllo wörld");
        long due = Long.parseLong(redisCli("TIME").lines().findFirst().orElseThrow()) * 1000 + 1000;
        for (String message : messages) {
            CRC32 crc = new CRC32();
            crc.update(message.getBytes(StandardCharsets.UTF_8));
            long shard = crc.getValue() % Integer.parseInt(shards);
            String added = redisCli("ZADD", "delayqueue:" + business + ":" + shard, Long.toString(due), message);
            assertThat(added.trim()).isEqualTo("1");
        }

        List<Received> all = new ArrayList<>();
        while (all.size() < messages.size()) {
            Received r = received.poll(5, TimeUnit.SECONDS);
            assertThat(r)
                    .as("delivery %d of %d", all.size() + 1, messages.size())
                    .isNotNull();
            all.add(r);
        }
        assertThat(all).extracting(Received::text).containsExactlyInAnyOrderElementsOf(messages);
        for (Received r : all) {
            assertThat(r.header(RelayHeaders.DUE_AT)).isEqualTo(due);
            assertThat(r.receivedAtMs())
                    .as("no earlier than due, within max-idle plus margin")
                    .isBetween(due, due + 200 + 500);
        }
    }

    private static String redisCli(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                "redis-cli",
                "-h",
                TestServices.redis().host(),
                "-p",
                Integer.toString(TestServices.redis().port()),
                "--no-raw"));
        command.set(command.size() - 1, "--raw");
        command.addAll(List.of(args));
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new IllegalStateException("redis-cli is needed for this test (apt-get install redis-tools)", e);
        }
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue())
                .as("redis-cli %s: %s", List.of(args), out)
                .isZero();
        return out;
    }
}
