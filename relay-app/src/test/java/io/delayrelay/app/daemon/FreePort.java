package io.delayrelay.app.daemon;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/**
 * A port nothing listens on right now, chosen by the OS: these tests run in several work trees at once on one
 * machine, so fixed ports would collide.
 */
final class FreePort {

    private FreePort() {}

    static int next() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
