package io.delayrelay.app.engine.wake;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import io.delayrelay.api.MetaFields;
import io.delayrelay.app.support.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.SubscriptionListener;
import org.springframework.data.redis.listener.ChannelTopic;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;

/**
 * Listens on every business's {@code K:wake} channel ("shard:due" messages from producers) and wakes its workers.
 * A lost wake-up only delays pick-up to max-idle. The message {@value MetaFields#CHANGED_NOTICE} says that
 * {@code K:meta} changed (an operator's pause or resume): it goes to the meta listener, and so does every
 * (re)subscription of a channel, since a notice may have been missed while the subscription was down.
 */
public final class WakeSubscriber implements MessageListener, SubscriptionListener {

    private static final Logger log = LoggerFactory.getLogger(WakeSubscriber.class);

    private final RedisMessageListenerContainer container = new RedisMessageListenerContainer();
    /**
     * Delivers the wake-ups in order on one thread (the container's default starts a thread per message; a meta
     * notice reads Redis, which must not happen on the client's event loop).
     */
    private final ExecutorService dispatch =
            Executors.newSingleThreadExecutor(DaemonThreads.named("relay-wake-listener"));

    private final Map<String, Listener> byChannel = new ConcurrentHashMap<>();

    /** One business's channel: its name (for logs), its workers, and what to do when K:meta may have changed. */
    private record Listener(String business, ShardWakeups wakeups, Runnable metaChanged) {}

    public WakeSubscriber(RedisConnectionFactory connectionFactory) {
        container.setConnectionFactory(connectionFactory);
        container.setTaskExecutor(dispatch);
        container.afterPropertiesSet();
    }

    /**
     * Hears {@code channel} ({@code K:wake} of {@code business}): wake-ups go to {@code wakeups}, meta notices and
     * every (re)subscription run {@code metaChanged}.
     */
    public void subscribe(String business, String channel, ShardWakeups wakeups, Runnable metaChanged) {
        byChannel.put(channel, new Listener(business, wakeups, metaChanged));
        container.addMessageListener(this, new ChannelTopic(channel));
    }

    public void unsubscribe(String channel) {
        byChannel.remove(channel);
        container.removeMessageListener(this, new ChannelTopic(channel));
    }

    public void start() {
        container.start();
    }

    public void stop() {
        try {
            container.stop();
            container.destroy();
            dispatch.shutdownNow();
        } catch (Exception e) {
            log.debug("closing the wake-up listener failed", e);
        }
    }

    @Override
    public void onMessage(Message message, byte[] pattern) {
        String channel = new String(message.getChannel(), StandardCharsets.UTF_8);
        Listener listener = byChannel.get(channel);
        if (listener == null) {
            return;
        }
        String body = new String(message.getBody(), StandardCharsets.US_ASCII);
        if (MetaFields.CHANGED_NOTICE.equals(body)) {
            listener.metaChanged().run();
            return;
        }
        int colon = body.indexOf(':');
        try {
            listener.wakeups()
                    .announce(Integer.parseInt(body.substring(0, colon)), Long.parseLong(body.substring(colon + 1)));
        } catch (RuntimeException e) {
            // a producer wrote something and said so badly: every shard is looked at once, so its entry is not late
            log.debug(
                    "business={}: malformed wake-up '{}' on {} (expected \"<shard>:<due-ms>\"); sweeping every shard",
                    listener.business(),
                    body,
                    channel);
            listener.wakeups().sweepAll();
        }
    }

    /** Subscribed, or subscribed again after a reconnect: notices sent meanwhile are lost, so K:meta is read again. */
    @Override
    public void onChannelSubscribed(byte[] channel, long count) {
        Listener listener = byChannel.get(new String(channel, StandardCharsets.UTF_8));
        if (listener != null) {
            listener.metaChanged().run();
        }
    }
}
