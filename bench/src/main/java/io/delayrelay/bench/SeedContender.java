package io.delayrelay.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The seed design (blog 004), re-implemented as a baseline: worker threads loop over the shards picked with
 * {@code INCR cursor % M}; on a shard, one Lua call takes and deletes the single earliest due member
 * ({@code zrangebyscore 0 now limit 0 1} + {@code zremrangebyrank 0 0}) and the thread publishes it with
 * {@code RabbitTemplate.convertAndSend} (no confirms), until the shard is empty; after a full round of empty
 * shards it sleeps 100 ms (the blog's text; its code sleeps 1 s).
 */
final class SeedContender implements Contender {

    static final long SLEEP_MS = 100;

    private static final RedisScript<String> TRY_GET_AND_DEL = RedisScript.of(
            """
            local items = redis.call('zrangebyscore', KEYS[1], 0, ARGV[1], 'limit', 0, 1)
            if #items == 0 then
              return ''
            else
              redis.call('zremrangebyrank', KEYS[1], 0, 0)
              return items[1]
            end
            """,
            String.class);

    private final Infra infra;
    private final String business;
    private final DelayQueueKeys keys;
    private final String exchange;
    private final int threads;
    private final List<Thread> workers = new ArrayList<>();
    private final AtomicLong errors = new AtomicLong();
    private LettuceConnectionFactory redisFactory;
    private StringRedisTemplate redis;
    private CachingConnectionFactory rabbitFactory;
    private RabbitTemplate rabbit;
    private volatile boolean quit;

    SeedContender(Infra infra, String exchange, int threads) {
        this.infra = infra;
        this.business = infra.name("seed");
        this.keys = DelayQueueKeys.forBusiness(business);
        this.exchange = exchange;
        this.threads = threads;
    }

    @Override
    public String label() {
        return "seed (blog 004)";
    }

    @Override
    public void start() {
        quit = false; // started again after close() when a drain is measured again
        redisFactory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(infra.config.redisHost(), infra.config.redisPort()));
        redisFactory.afterPropertiesSet();
        redisFactory.start();
        redis = new StringRedisTemplate(redisFactory);
        rabbitFactory = new CachingConnectionFactory(infra.config.rabbitHost(), infra.config.rabbitPort());
        rabbit = new RabbitTemplate(rabbitFactory);
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(this::run, "seed-" + i);
            t.setDaemon(true);
            workers.add(t);
            t.start();
        }
    }

    private void run() {
        int shards = infra.config.shards();
        int emptyShards = 0;
        while (!quit) {
            try {
                String zsetKey = keys.shard((int) (redis.opsForValue().increment(keys.cursor()) % shards));
                boolean any = false;
                while (!quit) {
                    String msg = redis.execute(
                            TRY_GET_AND_DEL, List.of(zsetKey), String.valueOf(System.currentTimeMillis()));
                    if (msg == null || msg.isEmpty()) {
                        break;
                    }
                    any = true;
                    rabbit.convertAndSend(exchange, "due", msg);
                }
                emptyShards = any ? 0 : emptyShards + 1;
                if (emptyShards >= shards) {
                    emptyShards = 0;
                    Thread.sleep(SLEEP_MS);
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (errors.incrementAndGet() == 1) {
                    System.err.println("seed worker error: " + e);
                }
            }
        }
    }

    @Override
    public long load(List<byte[]> bodies, long[] dues) throws Exception {
        return infra.loadShards(keys, infra.config.shards(), bodies, dues);
    }

    @Override
    public double loadRateGuess() {
        return 60_000;
    }

    @Override
    public void schedule(byte[] body, long dueMs) {
        String member = new String(body, StandardCharsets.US_ASCII);
        redis.opsForZSet().add(keys.shard(ShardSelector.shardOf(body, infra.config.shards())), member, dueMs);
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
        if (rabbitFactory != null) {
            rabbitFactory.destroy();
        }
        if (redisFactory != null) {
            redisFactory.destroy();
        }
    }
}
