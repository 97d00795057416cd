package io.delayrelay.bench;

import java.util.List;

/** Something that moves due messages from Redis to the benchmark exchange: the relay or a baseline. */
interface Contender extends AutoCloseable {

    String label();

    /** Starts relaying (before anything is due). */
    void start() throws Exception;

    /** Schedules the messages at their due times in this contender's Redis layout. Returns elapsed ms. */
    long load(List<byte[]> bodies, long[] dues) throws Exception;

    /** A rough loading rate in messages/s, to pick a due instant after loading ends. */
    double loadRateGuess();

    /** Schedules one message (lag scenario); called from several producer threads. */
    void schedule(byte[] body, long dueMs) throws Exception;

    @Override
    void close();
}
