package io.delayrelay.app.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP forwarder that a test can cut (every connection closed, new ones refused) and restore: a network
 * outage between the relay and one server, without stopping the shared server. It can also freeze (no byte passes
 * either way, the connections stay open: a peer that stopped answering) and thaw.
 */
public final class TcpProxy implements AutoCloseable {

    private final int port;
    private final String targetHost;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile ServerSocket server;
    private volatile boolean frozen;
    private final java.util.concurrent.atomic.AtomicInteger toDrop = new java.util.concurrent.atomic.AtomicInteger();

    /** Forwards 127.0.0.1:{@code port} to 127.0.0.1:{@code target}. */
    public TcpProxy(int port, int target) throws IOException {
        this(port, "127.0.0.1", target);
    }

    /** Forwards 127.0.0.1:{@code port} to {@code targetHost}:{@code target}. */
    public TcpProxy(int port, String targetHost, int target) throws IOException {
        this.port = port;
        this.targetHost = targetHost;
        this.target = target;
        restore();
    }

    /** Passes no more bytes either way (read ones are held) until {@link #thaw}; the connections stay open. */
    public void freeze() {
        frozen = true;
    }

    /** Passes bytes again, what was held first. */
    public void thaw() {
        frozen = false;
    }

    /** Closes each of the next {@code connections} accepted at once, before a byte passes: a peer that hung up. */
    public void dropNext(int connections) {
        toDrop.set(connections);
    }

    /** Accepts connections again. */
    public synchronized void restore() throws IOException {
        ServerSocket socket = new ServerSocket();
        socket.setReuseAddress(true);
        socket.bind(new InetSocketAddress("127.0.0.1", port));
        server = socket;
        Thread acceptor = new Thread(() -> accept(socket), "tcp-proxy-" + port);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Closes every connection and refuses new ones. */
    public synchronized void cut() throws IOException {
        server.close();
        for (Socket socket : sockets) {
            socket.close();
        }
        sockets.clear();
    }

    private void accept(ServerSocket socket) {
        while (!socket.isClosed()) {
            try {
                Socket client = socket.accept();
                if (toDrop.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    close(client);
                    continue;
                }
                Socket upstream = new Socket(targetHost, target);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                // closed by cut(), or the target refused: the client sees its connection drop
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread thread = new Thread(
                () -> {
                    byte[] buffer = new byte[16 * 1024];
                    try (InputStream in = from.getInputStream();
                            OutputStream out = to.getOutputStream()) {
                        int n;
                        while ((n = in.read(buffer)) >= 0) {
                            while (frozen && !from.isClosed()) {
                                Thread.sleep(10);
                            }
                            out.write(buffer, 0, n);
                            out.flush();
                        }
                    } catch (IOException e) {
                        // connection closed
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        close(from);
                        close(to);
                    }
                },
                "tcp-proxy-pump");
        thread.setDaemon(true);
        thread.start();
    }

    private static void close(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        cut();
    }
}
