package io.delayrelay.app.engine;

/**
 * Estimates Redis server time from the local clock plus an offset learned from every script reply, so sleeps
 * are aimed at Redis time (the time due scores are compared with) without a round trip.
 */
public final class RedisClock {

    private volatile long offsetMs;

    /** Records a Redis TIME reading, in epoch ms, taken just now. */
    public void observe(long redisNowMs) {
        offsetMs = redisNowMs - System.currentTimeMillis();
    }

    /** Estimated Redis time now, epoch ms. */
    public long nowMs() {
        return System.currentTimeMillis() + offsetMs;
    }
}
