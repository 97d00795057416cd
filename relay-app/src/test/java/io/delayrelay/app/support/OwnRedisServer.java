package io.delayrelay.app.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.delayrelay.app.faults.Shell;

/**
 * A redis-server a test started on a port it chose: the port is only trusted once the server answering there is the
 * one whose pid file the test's server wrote. Test JVMs run side by side (two forks), so a port found free can be
 * taken by another test's server before ours binds it; without this check a test would talk to, and later shut
 * down, a server of another test (review N19).
 */
public final class OwnRedisServer {

    private OwnRedisServer() {}

    /**
     * Whether the server answering on {@code port} is the process whose pid {@code pidFile} holds (false while the
     * pid file is not written yet).
     */
    public static boolean answers(int port, Path pidFile) {
        if (!Files.exists(pidFile)) {
            return false;
        }
        return answeringPid(port) == pid(pidFile);
    }

    /** Throws naming both pids unless the server on {@code port} is the one of {@code pidFile}. */
    public static void check(int port, Path pidFile) {
        long pid = pid(pidFile);
        long answering = answeringPid(port);
        if (answering != pid) {
            throw new IllegalStateException("127.0.0.1:" + port + " is answered by pid " + answering
                    + ", not by the redis-server this test started (pid " + pid + ", " + pidFile + ")");
        }
    }

    private static long pid(Path pidFile) {
        try {
            return Long.parseLong(Files.readString(pidFile).trim());
        } catch (IOException | NumberFormatException e) {
            throw new IllegalStateException("no pid in " + pidFile, e);
        }
    }

    private static long answeringPid(int port) {
        String info = Shell.run(10, "redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port), "info", "server");
        return info.lines()
                .filter(l -> l.startsWith("process_id:"))
                .mapToLong(
                        l -> Long.parseLong(l.substring("process_id:".length()).trim()))
                .findFirst()
                .orElse(-1);
    }
}
