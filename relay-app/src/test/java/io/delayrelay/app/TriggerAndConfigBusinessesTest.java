package io.delayrelay.app;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

import static org.assertj.core.api.Assertions.assertThat;

class TriggerAndConfigBusinessesTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    /** Routes VIP orders to their own routing key and tags every message. */
    static class OrderTimeoutTrigger extends AbstractDelayedMsgScanTrigger {
        private final String business;
        private final String exchange;

        OrderTimeoutTrigger(String business, String exchange) {
            this.business = business;
            this.exchange = exchange;
        }

        @Override
        public String getBusiness() {
            return business;
        }

        @Override
        public String getExchange() {
            return exchange;
        }

        @Override
        public String getRoutingKey() {
            return "order.timeout";
        }

        @Override
        public Integer getThreadNum() {
            return 3;
        }

        @Override
        public String routingKey(DueMessage message, String configured) {
            return message.bodyAsString().startsWith("vip:") ? "order.timeout.vip" : configured;
        }

        @Override
        public Message toAmqpMessage(DueMessage message, MessageProperties properties) {
            properties.setHeader("x-source", "trigger");
            return super.toAmqpMessage(message, properties);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TriggerConfig {
        @Bean
        OrderTimeoutTrigger orderTimeoutTrigger(Environment env) {
            return new OrderTimeoutTrigger(
                    env.getProperty("test.trigger.business"), env.getProperty("test.trigger.exchange"));
        }
    }

    @Test
    void configDeclaredBusinessAndSubclassedTriggerRunSideBySide() throws Exception {
        String declared = kit.business("declared");
        String coded = kit.business("coded");
        String declaredExchange = kit.exchange("declared");
        String codedExchange = kit.exchange("coded");
        BlockingQueue<Received> declaredQueue = kit.consume(kit.queue(declaredExchange, "review.default"));
        BlockingQueue<Received> normalQueue = kit.consume(kit.queue(codedExchange, "order.timeout"));
        BlockingQueue<Received> vipQueue = kit.consume(kit.queue(codedExchange, "order.timeout.vip"));
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), declared, declaredExchange, "review.default");
        props.put("test.trigger.business", coded);
        props.put("test.trigger.exchange", codedExchange);
        props.put("relay.businesses." + coded + ".batch-size", 7);
        ConfigurableApplicationContext context = kit.startRelay(props, TriggerConfig.class);

        RelayEngine engine = context.getBean(RelayEngine.class);
        assertThat(engine.relays()).containsOnlyKeys(declared, coded);
        assertThat(engine.relays().get(coded).spec().threads())
                .as("from the trigger")
                .isEqualTo(3);
        assertThat(engine.relays().get(coded).spec().batch().size())
                .as("config wins for a trigger")
                .isEqualTo(7);
        assertThat(engine.relays().get(declared).spec().threads()).as("default").isEqualTo(2);

        kit.producer().scheduleAfter(declared, "review order 5", Duration.ofMillis(300));
        kit.producer().scheduleAfter(coded, "order 6", Duration.ofMillis(300));
        kit.producer().scheduleAfter(coded, "vip:order 7", Duration.ofMillis(300));

        List<Received> reviews = RelayTestKit.collect(declaredQueue, 1, Duration.ofSeconds(5), Duration.ofMillis(200));
        List<Received> normal = RelayTestKit.collect(normalQueue, 1, Duration.ofSeconds(5), Duration.ofMillis(200));
        List<Received> vip = RelayTestKit.collect(vipQueue, 1, Duration.ofSeconds(5), Duration.ofMillis(200));
        assertThat(reviews).extracting(Received::text).containsExactly("review order 5");
        assertThat(reviews.get(0).headers()).doesNotContainKey("x-source");
        assertThat(normal).extracting(Received::text).containsExactly("order 6");
        assertThat(vip).extracting(Received::text).containsExactly("vip:order 7");
        assertThat(vip.get(0).headers()).containsEntry("x-source", "trigger");
        assertThat(context.getBean(RelayEngine.class).relays().get(coded).spec().threadNamePrefix())
                .isEqualTo("relay-" + coded + "-");
    }
}
