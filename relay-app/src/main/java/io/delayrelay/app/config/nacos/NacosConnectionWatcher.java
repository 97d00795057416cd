package io.delayrelay.app.config.nacos;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.support.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Tells operators once when the connection to the Nacos server is lost and once when it is back. Meanwhile the
 * relay keeps the last configuration it had (nothing is refreshed while the server is away); the Nacos client
 * reconnects by itself and, once connected, delivers changes made in the meantime.
 */
class NacosConnectionWatcher implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(NacosConnectionWatcher.class);

    private final NacosServer server;
    private final String serverAddr;
    private final List<NacosImport> imports;
    private final Duration interval;
    private ScheduledExecutorService checker;
    private volatile boolean running;
    private boolean reachable;

    NacosConnectionWatcher(NacosServer server, String serverAddr, List<NacosImport> imports, Duration interval) {
        this.server = server;
        this.serverAddr = serverAddr;
        this.imports = imports;
        this.interval = interval;
    }

    /** Compares the connection with the last check; logs a change. */
    synchronized void check() {
        boolean up = server.up();
        if (up == reachable) {
            return;
        }
        reachable = up;
        String data =
                String.join(", ", imports.stream().map(NacosImport::toString).toList());
        if (up) {
            log.info("Nacos server {} reachable: following {}", serverAddr, data);
        } else {
            log.warn(
                    "Nacos server {} unreachable: keeping the last good configuration of {}; reconnecting",
                    serverAddr,
                    data);
        }
    }

    @Override
    public synchronized void start() {
        // The start-up check already reported an unreachable server (or failed); start from what is true now.
        reachable = server.up();
        checker = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-nacos-watch"));
        checker.scheduleWithFixedDelay(
                () -> {
                    try {
                        check();
                    } catch (RuntimeException e) {
                        log.debug("checking the Nacos connection failed", e);
                    }
                },
                interval.toMillis(),
                interval.toMillis(),
                TimeUnit.MILLISECONDS);
        running = true;
    }

    @Override
    public synchronized void stop() {
        running = false;
        if (checker != null) {
            checker.shutdownNow();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
