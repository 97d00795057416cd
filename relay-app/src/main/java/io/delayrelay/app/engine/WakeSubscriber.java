package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

import io.delayrelay.api.MetaFields;
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
final class WakeSubscriber implements MessageListener, SubscriptionListener {

    private static final Logger log = LoggerFactory.getLogger(WakeSubscriber.class);

    private final RedisMessageListenerContainer container = new RedisMessageListenerContainer();
    /**
     * Delivers the wake-ups in order on one thread (the container's default starts a thread per message; a meta
     * notice reads Redis, which must not happen on the client's event loop).
     */
    private final ExecutorService dispatch = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "relay-wake-listener");
        t.setDaemon(true);
        return t;
    });

    private final Map<String, BusinessRelay> byChannel = new ConcurrentHashMap<>();
    private final Consumer<BusinessRelay> metaChanged;

    WakeSubscriber(RedisConnectionFactory connectionFactory, Consumer<BusinessRelay> metaChanged) {
        this.metaChanged = metaChanged;
        container.setConnectionFactory(connectionFactory);
        container.setTaskExecutor(dispatch);
        container.afterPropertiesSet();
    }

    void subscribe(BusinessRelay relay) {
        String channel = relay.spec().keys().wake();
        byChannel.put(channel, relay);
        container.addMessageListener(this, new ChannelTopic(channel));
    }

    void unsubscribe(BusinessRelay relay) {
        String channel = relay.spec().keys().wake();
        byChannel.remove(channel);
        container.removeMessageListener(this, new ChannelTopic(channel));
    }

    void start() {
        container.start();
    }

    void stop() {
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
        BusinessRelay relay = byChannel.get(channel);
        if (relay == null) {
            return;
        }
        String body = new String(message.getBody(), StandardCharsets.US_ASCII);
        if (MetaFields.CHANGED_NOTICE.equals(body)) {
            metaChanged.accept(relay);
            return;
        }
        int colon = body.indexOf(':');
        try {
            relay.wake(Integer.parseInt(body.substring(0, colon)), Long.parseLong(body.substring(colon + 1)));
        } catch (RuntimeException e) {
            // a producer wrote something and said so badly: every shard is looked at once, so its entry is not late
            log.debug(
                    "business={}: malformed wake-up '{}' on {} (expected \"<shard>:<due-ms>\"); sweeping every shard",
                    relay.spec().name(),
                    body,
                    channel);
            relay.sweepAll();
        }
    }

    /** Subscribed, or subscribed again after a reconnect: notices sent meanwhile are lost, so K:meta is read again. */
    @Override
    public void onChannelSubscribed(byte[] channel, long count) {
        BusinessRelay relay = byChannel.get(new String(channel, StandardCharsets.UTF_8));
        if (relay != null) {
            metaChanged.accept(relay);
        }
    }
}
