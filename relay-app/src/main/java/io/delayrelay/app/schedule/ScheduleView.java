package io.delayrelay.app.schedule;

import java.util.List;
import java.util.Map;

/**
 * A schedule as the ops endpoint and the console show it.
 *
 * @param name         its name
 * @param business     its business
 * @param origin       {@code config} (declared in relay.schedules) or {@code runtime} (created with the ops endpoint)
 * @param definition   when its slots fall: {@code cron <expr> <zone>} or {@code every <period>}; null when this
 *                     instance does not know it
 * @param state        {@code active}, {@code paused}, or {@code not-declared-here} (declared in another instance's
 *                     configuration, or no more: delete it if so)
 * @param pausedBy     the operator who paused it, or null
 * @param catchUp      its catch-up policy
 * @param next         its next fire times, epoch ms (at most 5)
 * @param lastSlot     the last slot handed to the relay, epoch ms, or null
 * @param lastDelivery where that slot's entry is: scheduled, in-flight, relayed or dead; null when none
 * @param written      slot entries written since it was created
 * @param skipped      slots skipped since it was created, by reason
 */
public record ScheduleView(
        String name,
        String business,
        String origin,
        String definition,
        String state,
        String pausedBy,
        String catchUp,
        List<Long> next,
        Long lastSlot,
        String lastDelivery,
        long written,
        Map<String, Long> skipped) {}
