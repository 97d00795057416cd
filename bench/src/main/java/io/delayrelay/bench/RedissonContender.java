package io.delayrelay.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RFuture;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.config.Config;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * Redisson's RDelayedQueue as a baseline: messages are offered with their delay; bridge threads take from the
 * destination blocking queue and publish to RabbitMQ (persistent, no confirms: Redisson has already removed the
 * element, so a confirm could not make the hand-off safer).
 */
@SuppressWarnings("deprecation")
final class RedissonContender implements Contender {

    private final Infra infra;
    private final String name;
    private final String exchange;
    private final int threads;
    private final List<Thread> workers = new ArrayList<>();
    private final AtomicLong errors = new AtomicLong();
    private RedissonClient redisson;
    private RBlockingQueue<byte[]> queue;
    private RDelayedQueue<byte[]> delayed;
    private CachingConnectionFactory rabbitFactory;
    private RabbitTemplate rabbit;
    private volatile boolean quit;

    RedissonContender(Infra infra, String exchange, int threads) {
        this.infra = infra;
        this.name = infra.name("redisson");
        this.exchange = exchange;
        this.threads = threads;
    }

    @Override
    public String label() {
        return "Redisson RDelayedQueue";
    }

    @Override
    public void start() {
        quit = false; // started again after close() when a drain is measured again
        Config config = new Config();
        config.setCodec(ByteArrayCodec.INSTANCE);
        config.useSingleServer().setAddress("redis://" + infra.config.redisHost() + ":" + infra.config.redisPort());
        redisson = Redisson.create(config);
        queue = redisson.getBlockingQueue(name, ByteArrayCodec.INSTANCE);
        delayed = redisson.getDelayedQueue(queue);
        rabbitFactory = new CachingConnectionFactory(infra.config.rabbitHost(), infra.config.rabbitPort());
        rabbit = new RabbitTemplate(rabbitFactory);
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(this::bridge, "redisson-bridge-" + i);
            t.setDaemon(true);
            workers.add(t);
            t.start();
        }
    }

    private void bridge() {
        MessageProperties props = new MessageProperties();
        props.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
        while (!quit) {
            try {
                byte[] body = queue.poll(200, TimeUnit.MILLISECONDS);
                if (body != null) {
                    rabbit.send(exchange, "due", new Message(body, props));
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (!quit && errors.incrementAndGet() == 1) {
                    System.err.println("redisson bridge error: " + e);
                }
            }
        }
    }

    @Override
    public long load(List<byte[]> bodies, long[] dues) throws Exception {
        long start = System.nanoTime();
        List<RFuture<Void>> window = new ArrayList<>();
        for (int i = 0; i < bodies.size(); i++) {
            long delay = Math.max(0, dues[i] - System.currentTimeMillis());
            window.add(delayed.offerAsync(bodies.get(i), delay, TimeUnit.MILLISECONDS));
            if (window.size() >= 2_000) {
                for (RFuture<Void> f : window) {
                    f.toCompletableFuture().get(60, TimeUnit.SECONDS);
                }
                window.clear();
            }
        }
        for (RFuture<Void> f : window) {
            f.toCompletableFuture().get(60, TimeUnit.SECONDS);
        }
        return (System.nanoTime() - start) / 1_000_000;
    }

    @Override
    public double loadRateGuess() {
        return 8_000;
    }

    @Override
    public void schedule(byte[] body, long dueMs) {
        delayed.offer(body, Math.max(0, dueMs - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        quit = true;
        for (Thread t : workers) {
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        workers.clear();
        if (delayed != null) {
            delayed.destroy();
        }
        if (rabbitFactory != null) {
            rabbitFactory.destroy();
        }
        if (redisson != null) {
            redisson.shutdown();
        }
    }
}
