package io.delayrelay.app.engine.amqp;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.SocketFactory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plain TCP sockets for the broker connection whose writes a publishing worker can hold back until the end of its
 * batch: amqp-client writes and flushes every {@code basicPublish} on its own (one socket write, and on the broker one
 * read, per message); a worker publishing a batch inside a {@link Wave} sends it in one write, or one per
 * {@link #HOLD_LIMIT} bytes.
 *
 * <p>Only the frames of {@code basicPublish} calls made inside {@link Wave#defer} are held. Every other write on the
 * connection (channel opens, confirm-select, heartbeats, another thread's frames, anything that waits for a reply)
 * goes out at once, after the bytes held before it, so the order on the wire is the order of the writes. A wave's end
 * sends what is still held; a failure to send it closes the socket, so that the connection and its channels close
 * and every publish waiting for a confirm gets its outcome (the entries stay leased in Redis and are retried).
 *
 * <p>Used for plain connections only: a TLS connection keeps amqp-client's own socket factory.
 */
public final class CoalescingSocketFactory extends SocketFactory {

    private static final Logger log = LoggerFactory.getLogger(CoalescingSocketFactory.class);

    /** The most bytes held before they are written anyway: a long batch starts going out before its end. */
    static final int HOLD_LIMIT = 64 * 1024;

    private static final ThreadLocal<Wave> WAVE = new ThreadLocal<>();

    private final AtomicLong writes = new AtomicLong();

    /**
     * Starts a wave on the calling thread (a batch of publishes whose frames go out together); a wave already open
     * on the thread is returned as a nested one whose close does nothing.
     */
    public static Wave wave() {
        Wave open = WAVE.get();
        if (open != null) {
            return new Wave(open);
        }
        Wave wave = new Wave(null);
        WAVE.set(wave);
        return wave;
    }

    /** Socket writes made so far by the sockets of this factory (tests and benchmarks). */
    public long writes() {
        return writes.get();
    }

    @Override
    public Socket createSocket() {
        return new CoalescingSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port));
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port));
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        Socket socket = createSocket();
        socket.bind(new InetSocketAddress(localHost, localPort));
        socket.connect(new InetSocketAddress(host, port));
        return socket;
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        Socket socket = createSocket();
        socket.bind(new InetSocketAddress(localAddress, localPort));
        socket.connect(new InetSocketAddress(address, port));
        return socket;
    }

    private Socket connected(InetSocketAddress address) throws IOException {
        Socket socket = createSocket();
        socket.connect(address);
        return socket;
    }

    /**
     * A batch of publishes on the calling thread. {@link #defer} runs one publish whose writes are held; {@link
     * #close} sends what is held. Not shared between threads.
     */
    public static final class Wave implements AutoCloseable {

        /** The thread's outermost wave: the one that holds and sends (itself when this is it). */
        private final Wave root;

        private final List<HoldingStream> holding = new ArrayList<>(2);
        private boolean deferring;

        private Wave(Wave root) {
            this.root = root == null ? this : root;
        }

        /** Runs {@code write} (one publish) with its socket writes held until the thread's outermost wave ends. */
        public void defer(IoAction write) throws IOException {
            boolean before = root.deferring;
            root.deferring = true;
            try {
                write.run();
            } finally {
                root.deferring = before;
            }
        }

        /** Sends what the wave's publishes left held; only the thread's outermost wave does. */
        @Override
        public void close() {
            if (root != this) {
                return;
            }
            WAVE.remove();
            for (HoldingStream stream : holding) {
                stream.sendHeld();
            }
            holding.clear();
        }
    }

    /** A write that may throw {@link IOException}. */
    @FunctionalInterface
    public interface IoAction {
        void run() throws IOException;
    }

    /** The current thread's wave while it defers a publish, else null. */
    private static Wave deferringWave() {
        Wave wave = WAVE.get();
        return wave != null && wave.deferring ? wave : null;
    }

    private final class CoalescingSocket extends Socket {

        private HoldingStream out;

        @Override
        public synchronized OutputStream getOutputStream() throws IOException {
            if (out == null) {
                out = new HoldingStream(this, super.getOutputStream());
            }
            return out;
        }
    }

    /** The socket's output stream: a deferring thread's bytes are held, everyone else's go out after them. */
    private final class HoldingStream extends OutputStream {

        private final Socket socket;
        private final OutputStream out;
        private byte[] held = new byte[8 * 1024];
        private int size;

        HoldingStream(Socket socket, OutputStream out) {
            this.socket = socket;
            this.out = out;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) throws IOException {
            Wave wave = deferringWave();
            if (wave != null) {
                if (size + len > HOLD_LIMIT) {
                    writeHeld();
                }
                if (len <= HOLD_LIMIT) {
                    hold(b, off, len);
                    if (!wave.holding.contains(this)) {
                        wave.holding.add(this);
                    }
                    return;
                }
            } else if (size > 0 && size + len <= HOLD_LIMIT) {
                // what was held, then this write, in one socket write
                hold(b, off, len);
                writeHeld();
                return;
            }
            writeHeld();
            writes.incrementAndGet();
            out.write(b, off, len);
        }

        @Override
        public synchronized void flush() throws IOException {
            if (deferringWave() != null) {
                return;
            }
            writeHeld();
            out.flush();
        }

        /** A wave's end: sends what is held; a failure closes the socket (see the class comment). */
        synchronized void sendHeld() {
            try {
                writeHeld();
                out.flush();
            } catch (IOException e) {
                log.warn(
                        "sending {} held bytes of published messages to the broker failed ({}): closing the "
                                + "connection so that its publishes are settled and retried",
                        size,
                        e.toString());
                size = 0;
                try {
                    socket.close();
                } catch (IOException closeFailure) {
                    log.debug("closing the broker socket failed", closeFailure);
                }
            }
        }

        @Override
        public synchronized void close() throws IOException {
            try {
                writeHeld();
            } finally {
                out.close();
            }
        }

        private void hold(byte[] b, int off, int len) {
            if (size + len > held.length) {
                held = Arrays.copyOf(held, Math.max(held.length * 2, size + len));
            }
            System.arraycopy(b, off, held, size, len);
            size += len;
        }

        private void writeHeld() throws IOException {
            if (size == 0) {
                return;
            }
            int n = size;
            size = 0;
            writes.incrementAndGet();
            out.write(held, 0, n);
        }
    }
}
