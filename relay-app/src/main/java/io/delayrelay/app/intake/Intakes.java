package io.delayrelay.app.intake;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.app.config.IntakeSettings;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the AMQP intakes: one connection of their own, one channel and consumer per intake. A timer connects again
 * after an outage, declares what is missing, starts what is configured and not running, and stops what was removed
 * or lost its channel; a setup the broker refuses is logged with its cause and tried again.
 */
public final class Intakes implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(Intakes.class);

    /** How often the timer checks the connection and the consumers. */
    static final long TEND_MS = 2_000;

    /** One intake's consumer and the settings it runs with. */
    private record Running(IntakeSettings settings, Channel channel, IntakeConsumer consumer) {}

    private final ConnectionFactory factory;
    private final Supplier<Map<String, IntakeSettings>> configured;
    private final IntakeConsumer.Writer writer;
    private final IntakeMetrics metrics;
    private final Map<String, Running> running = new ConcurrentHashMap<>();
    private final Map<String, String> lastProblem = new ConcurrentHashMap<>();
    private volatile Map<String, IntakeSettings> wanted = Map.of();
    private volatile ScheduledExecutorService timer;
    private volatile Connection connection;

    /**
     * @param factory    amqp-client's factory of the relay's RabbitMQ settings; copied (the timer recovers)
     * @param configured the intakes as configured now (validated)
     */
    public Intakes(
            ConnectionFactory factory,
            Supplier<Map<String, IntakeSettings>> configured,
            IntakeConsumer.Writer writer,
            IntakeMetrics metrics) {
        this.factory = factory.clone();
        this.factory.setAutomaticRecoveryEnabled(false);
        this.configured = configured;
        this.writer = writer;
        this.metrics = metrics;
    }

    @Override
    public synchronized void start() {
        if (timer != null) {
            return;
        }
        wanted = configured.get();
        timer = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("delay-relay-intakes"));
        timer.scheduleWithFixedDelay(this::tend, 0, TEND_MS, TimeUnit.MILLISECONDS);
    }

    /** Takes the configuration again (after a refresh): new and changed intakes start, removed ones stop. */
    public void reload() {
        Map<String, IntakeSettings> next;
        try {
            next = configured.get();
        } catch (RuntimeException e) {
            log.warn(
                    "intakes: reloaded configuration rejected, the running intakes keep their settings: {}",
                    e.getMessage());
            metrics.failed("*", "config rejected", e);
            return;
        }
        wanted = next;
        ScheduledExecutorService t = timer;
        if (t != null) {
            t.execute(this::tend);
        }
    }

    /** Names of the intakes consuming now. */
    public Map<String, Boolean> consuming() {
        Map<String, Boolean> view = new LinkedHashMap<>();
        wanted.keySet().forEach(name -> view.put(name, isConsuming(name)));
        return view;
    }

    private boolean isConsuming(String name) {
        Running r = running.get(name);
        return r != null && r.channel().isOpen();
    }

    private synchronized void tend() {
        try {
            if (timer == null) {
                return;
            }
            Map<String, IntakeSettings> want = wanted;
            running.forEach((name, r) -> {
                if (!sameSettings(r.settings(), want.get(name)) || !r.channel().isOpen()) {
                    stopOne(name, r);
                }
            });
            if (want.isEmpty()) {
                return;
            }
            Connection c = connection();
            if (c == null) {
                return;
            }
            want.forEach((name, settings) -> {
                if (!running.containsKey(name)) {
                    startOne(c, name, settings);
                }
            });
            want.keySet().forEach(name -> metrics.depth(name, depth(c, name)));
        } catch (RuntimeException e) {
            log.warn("intakes: tending failed: {}", Exceptions.rootMessage(e), e);
        }
    }

    private Connection connection() {
        Connection c = connection;
        if (c != null && c.isOpen()) {
            return c;
        }
        if (c != null) {
            // lost (broker restart, network): a new one; the consumers start again on it
            closeQuietly(c);
        }
        try {
            connection = factory.newConnection("delay-relay-intakes");
            lastProblem.remove("");
            return connection;
        } catch (IOException | TimeoutException e) {
            problem("", "cannot connect to RabbitMQ: " + Exceptions.rootMessage(e));
            return null;
        }
    }

    private void startOne(Connection c, String name, IntakeSettings settings) {
        String queue = IntakeSettings.queueOf(name);
        String step = "declaring exchange '" + settings.getExchange() + "' (topic, durable)";
        Channel channel = null;
        try {
            // declarations on a channel of their own: a refusal closes that channel, not the consumer's
            try (Channel setup = c.createChannel()) {
                setup.exchangeDeclare(settings.getExchange(), "topic", true);
                step = "declaring queue '" + queue + "' (quorum, durable)";
                setup.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
                step = "binding queue '" + queue + "' to exchange '" + settings.getExchange() + "' with '#'";
                setup.queueBind(queue, settings.getExchange(), "#");
                step = "checking deliver-to exchange '" + settings.getDeliverTo() + "'";
                setup.exchangeDeclarePassive(settings.getDeliverTo());
            }
            step = "consuming queue '" + queue + "'";
            channel = c.createChannel();
            channel.basicQos(settings.getPrefetch());
            IntakeConsumer consumer = new IntakeConsumer(channel, name, settings, writer, metrics);
            try {
                channel.basicConsume(queue, false, "delay-relay-intake-" + name, consumer);
            } catch (IOException | RuntimeException e) {
                consumer.stop();
                throw e;
            }
            running.put(name, new Running(settings, channel, consumer));
            lastProblem.remove(name);
            metrics.up(name, true);
            log.info(
                    "intake={} business={}: consuming '{}' (exchange '{}'), delivering to '{}'",
                    name,
                    settings.businessOf(name),
                    queue,
                    settings.getExchange(),
                    settings.getDeliverTo());
        } catch (IOException | TimeoutException | RuntimeException e) {
            if (channel != null) {
                closeQuietly(channel);
            }
            metrics.up(name, false);
            metrics.failed(name, "setup failed", e);
            problem(name, step + " failed: " + Exceptions.rootMessage(e) + hint(step, e));
        }
    }

    private static String hint(String step, Exception e) {
        String text = String.valueOf(Exceptions.rootMessage(e));
        if (text.contains("PRECONDITION_FAILED") && step.startsWith("declaring exchange")) {
            return " (it exists with another type or arguments, e.g. an old x-delayed-message exchange: drain it on"
                    + " RabbitMQ 4.2, delete it, and the relay declares the intake exchange; docs/amqp-intake.md)";
        }
        if (text.contains("PRECONDITION_FAILED") && step.startsWith("declaring queue")) {
            return " (the queue exists with other arguments: delete it once empty)";
        }
        if (text.contains("NOT_FOUND") && step.startsWith("checking deliver-to")) {
            return " (declare the exchange consumers bind to; the intake starts once it exists)";
        }
        return "";
    }

    private void stopOne(String name, Running r) {
        running.remove(name);
        metrics.up(name, false);
        r.consumer().stop();
        closeQuietly(r.channel());
        log.info("intake={}: stopped consuming", name);
    }

    private long depth(Connection c, String name) {
        if (!running.containsKey(name)) {
            return -1;
        }
        try (Channel probe = c.createChannel()) {
            return probe.messageCount(IntakeSettings.queueOf(name));
        } catch (IOException | TimeoutException | RuntimeException e) {
            return -1;
        }
    }

    /** Logs a problem at ERROR once, then again only when it changes. */
    private void problem(String name, String text) {
        if (!text.equals(lastProblem.put(name, text))) {
            log.error("intake={}: {}; trying again every {} ms", name.isEmpty() ? "*" : name, text, TEND_MS);
        }
    }

    private static boolean sameSettings(IntakeSettings a, IntakeSettings b) {
        return b != null
                && Objects.equals(a.getExchange(), b.getExchange())
                && Objects.equals(a.getDeliverTo(), b.getDeliverTo())
                && Objects.equals(a.getBusiness(), b.getBusiness())
                && Objects.equals(a.getMaxDelay(), b.getMaxDelay())
                && a.getPrefetch() == b.getPrefetch();
    }

    @Override
    public synchronized void stop() {
        ScheduledExecutorService t = timer;
        timer = null;
        if (t != null) {
            t.shutdownNow();
        }
        // unacknowledged messages go back to the queue when their channel closes: none is lost
        running.forEach(this::stopOne);
        Connection c = connection;
        connection = null;
        if (c != null) {
            closeQuietly(c);
        }
    }

    @Override
    public boolean isRunning() {
        return timer != null;
    }

    /** After the engine (which starts at {@code Integer.MAX_VALUE - 1000}): intakes start last and stop first. */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 900;
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            log.debug("closing failed", e);
        }
    }
}
