package io.delayrelay.api;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.LuaScripts;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * Creates and manages runtime recurring schedules from an application (docs/schedules.md): the definition goes to
 * the business's schedule state hash in Redis, where every relay instance running the business sees it. Pause, resume and
 * delete are requests the relay carries out at its next tend (within about a second while a relay runs).
 * Schedules declared in the relay's configuration ({@code relay.schedules}) cannot be replaced or deleted here.
 *
 * <pre>{@code
 * RecurringScheduleClient schedules = new RecurringScheduleClient(connectionFactory);
 * schedules.put("reminders", "morning", RecurringSchedule.cron("0 0 9 * * MON-FRI").zone("Asia/Shanghai"), "billing");
 * }</pre>
 */
public class RecurringScheduleClient {

    private static final RedisScript<Long> DEFINE =
            LuaScripts.load("io/delayrelay/api/internal/schedule-define.lua", Long.class);

    private static final RedisScript<Long> REQUEST =
            LuaScripts.load("io/delayrelay/api/internal/schedule-request.lua", Long.class);

    private static final java.util.regex.Pattern NAME =
            java.util.regex.Pattern.compile("[a-z0-9]([a-z0-9-]*[a-z0-9])?");

    private final RedisTemplate<byte[], byte[]> redis;
    private final Function<String, DelayQueueKeys> keys;

    /** A client for businesses with the default source key {@code delayqueue:<business>}. */
    public RecurringScheduleClient(RedisConnectionFactory factory) {
        this(factory, DelayQueueKeys::forBusiness);
    }

    /** A client with the businesses' keys given by {@code keys}. */
    public RecurringScheduleClient(RedisConnectionFactory factory, Function<String, DelayQueueKeys> keys) {
        this.redis = ByteRedisTemplates.create(factory);
        this.keys = keys;
    }

    /**
     * Creates schedule {@code name} of {@code business}, or replaces its definition (a change takes effect from its
     * next slot). Its first slot is the first after the relay takes it up.
     *
     * @param createdBy who created it, shown by the ops endpoint
     * @throws IllegalStateException when {@code name} is a schedule declared in the relay's configuration
     */
    public void put(String business, String name, RecurringSchedule schedule, String createdBy) {
        DelayQueueKeys k = keysOf(business, name);
        List<byte[]> args = new ArrayList<>();
        args.add(bytes(name));
        args.add(bytes(Integer.toString(RecurringSchedule.DEF_FIELDS.size())));
        RecurringSchedule.DEF_FIELDS.forEach(f -> args.add(bytes(f)));
        schedule.fields().forEach((field, value) -> {
            args.add(bytes(field));
            args.add(bytes(value));
        });
        args.add(bytes("created-by"));
        args.add(bytes(createdBy == null ? "relay-api" : createdBy));
        Long done = redis.execute(DEFINE, List.of(bytes(k.schedules()), bytes(k.scheduleState())), args.toArray());
        if (done == null || done != 1) {
            throw new IllegalStateException(
                    "schedule " + name + " of business " + business + " is declared in the relay's configuration");
        }
    }

    /** Pauses a schedule fleet-wide; slots passed while paused are counted as skipped. */
    public void pause(String business, String name, String operator) {
        request(business, name, "paused-by", operator == null ? "relay-api" : operator, false);
    }

    /** Resumes a schedule paused with {@link #pause} (or the ops endpoint), from its next slot. */
    public void resume(String business, String name) {
        request(business, name, "paused-by", "", false);
    }

    /**
     * Deletes a runtime schedule: the relay drops its state and withdraws its pending slot entry unless already
     * popped, at its next tend.
     *
     * @throws IllegalStateException for a schedule declared in the relay's configuration
     */
    public void delete(String business, String name) {
        request(business, name, "delete-requested", "1", true);
    }

    private void request(String business, String name, String field, String value, boolean runtimeOnly) {
        DelayQueueKeys k = keysOf(business, name);
        Long done = redis.execute(
                REQUEST,
                List.of(bytes(k.schedules()), bytes(k.scheduleState())),
                bytes(name),
                bytes(field),
                bytes(value),
                bytes(runtimeOnly ? "1" : ""));
        if (done == null || done == 0) {
            throw new IllegalArgumentException("no schedule " + name + " of business " + business);
        }
        if (done < 0) {
            throw new IllegalStateException("schedule " + name + " of business " + business
                    + " is declared in the relay's configuration: remove it there");
        }
    }

    private DelayQueueKeys keysOf(String business, String name) {
        DelayQueueKeys k = keys.apply(DelayQueueKeys.validateName("business name", business));
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "schedule name '" + name + "': use lowercase letters, digits and '-' (not first or last)");
        }
        return k;
    }
}
