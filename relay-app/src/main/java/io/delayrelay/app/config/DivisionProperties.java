package io.delayrelay.app.config;

import java.time.Duration;
import java.util.List;

import io.delayrelay.app.engine.ShardDivision;
import io.delayrelay.app.trigger.ConfigProblem;

/**
 * {@code relay.division.*}: each instance holds a seat drawn with INCR K:cursor and renewed every third of
 * seat-ttl; the live seats, in INCR order, divide every business's shards (shard mod seats = rank), so one instance
 * pops a given shard. A shard of an instance that stopped renewing passes to another within 4/3 of seat-ttl.
 */
public class DivisionProperties {

    static final Duration MIN_SEAT_TTL = Duration.ofMillis(300);
    static final Duration MAX_SEAT_TTL = Duration.ofMinutes(10);
    static final Duration MIN_GIVE_UP_AFTER = Duration.ofMillis(100);

    /** Whether the instances divide the shards (false: every instance pops every shard, as before 0.2). */
    private boolean enabled = true;

    /** How long a seat lives without renewal: the hand-over bound is 4/3 of it (renewals every third). */
    private Duration seatTtl = ShardDivision.Settings.DEFAULT_SEAT_TTL;

    /**
     * How long this instance's publishes may go unanswered by RabbitMQ (or all its workers stay in one pop) before
     * it gives its seat up, so that the others pop its shards; it takes a seat again once the broker answers.
     */
    private Duration giveUpAfter = ShardDivision.Settings.DEFAULT_GIVE_UP_AFTER;

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Duration getSeatTtl() {
        return seatTtl;
    }

    public void setSeatTtl(Duration seatTtl) {
        this.seatTtl = seatTtl;
    }

    public Duration getGiveUpAfter() {
        return giveUpAfter;
    }

    public void setGiveUpAfter(Duration giveUpAfter) {
        this.giveUpAfter = giveUpAfter;
    }

    ShardDivision.Settings toSettings() {
        return new ShardDivision.Settings(enabled, seatTtl, giveUpAfter);
    }

    /** Adds a problem per setting out of range, naming property and value. */
    void validate(List<ConfigProblem> problems) {
        within(
                problems,
                "relay.division.seat-ttl",
                seatTtl,
                MIN_SEAT_TTL,
                "a seat is renewed every third of it; a "
                        + "stopped instance's shards pass to the others within 4/3 of it");
        within(
                problems,
                "relay.division.give-up-after",
                giveUpAfter,
                MIN_GIVE_UP_AFTER,
                "publishes unanswered for that long make an instance give its seat up");
    }

    /** Adds a problem when {@code value} is not between {@code min} and {@link #MAX_SEAT_TTL}. */
    private static void within(List<ConfigProblem> problems, String name, Duration value, Duration min, String why) {
        if (value == null || value.compareTo(min) < 0 || value.compareTo(MAX_SEAT_TTL) > 0) {
            problems.add(ConfigProblem.global(
                    name,
                    value,
                    "must be between " + min.toMillis() + "ms and " + MAX_SEAT_TTL.toMinutes() + "m (" + why + ")"));
        }
    }
}
