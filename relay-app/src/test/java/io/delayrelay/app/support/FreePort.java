package io.delayrelay.app.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/**
 * A port nothing listens on right now, chosen by the OS: these tests run in several work trees at once on one
 * machine, so fixed ports would collide.
 */
public final class FreePort {

    private FreePort() {}

    public static int next() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
