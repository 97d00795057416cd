package io.delayrelay.app.demo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;

import io.delayrelay.api.DelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.context.annotation.Profile;
import org.springframework.stereotype.Component;

/**
 * The quick-start demo ({@code demo} profile): binds a queue to the demo exchange, schedules a few messages due in
 * a few seconds and prints each one as it arrives, with its lag.
 */
@Component
@Profile("demo")
class DemoRunner implements ApplicationRunner, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(DemoRunner.class);
    static final String BUSINESS = "demo";
    static final String EXCHANGE = "delay-relay.demo";
    static final String ROUTING_KEY = "demo";

    private final DelayedMessageProducer producer;
    private final ConnectionFactory connectionFactory;
    private SimpleMessageListenerContainer container;

    DemoRunner(DelayedMessageProducer producer, ConnectionFactory connectionFactory) {
        this.producer = producer;
        this.connectionFactory = connectionFactory;
    }

    @Override
    public void run(ApplicationArguments args) {
        RabbitAdmin admin = new RabbitAdmin(connectionFactory);
        Queue queue = admin.declareQueue();
        admin.declareBinding(new Binding(queue.getName(), Binding.DestinationType.QUEUE, EXCHANGE, ROUTING_KEY, null));
        container = new SimpleMessageListenerContainer(connectionFactory);
        container.setQueueNames(queue.getName());
        container.setAcknowledgeMode(AcknowledgeMode.AUTO);
        container.setMessageListener(message -> {
            long now = System.currentTimeMillis();
            Object due = message.getMessageProperties().getHeaders().get(RelayHeaders.DUE_AT);
            long dueAt = due instanceof Number n ? n.longValue() : now;
            log.info(
                    "demo consumer: received '{}' due {} -> lag {} ms",
                    new String(message.getBody(), StandardCharsets.UTF_8),
                    time(dueAt),
                    now - dueAt);
        });
        container.start();
        for (int i = 1; i <= 5; i++) {
            long dueAt = producer.scheduleAfter(
                    BUSINESS, "reminder #" + i + " (scheduled " + (i + 1) + " s ahead)", Duration.ofSeconds(i + 1));
            log.info("demo producer: scheduled reminder #{} due {}", i, time(dueAt));
        }
        log.info("demo: watch the messages arrive; Ctrl-C stops the relay");
    }

    private static LocalTime time(long epochMs) {
        return LocalTime.ofInstant(Instant.ofEpochMilli(epochMs), ZoneId.systemDefault());
    }

    @Override
    public void destroy() {
        if (container != null) {
            container.stop();
        }
    }
}
