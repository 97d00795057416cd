package io.delayrelay.app.config.nacos;

import com.alibaba.cloud.nacos.NacosConfigManager;
import com.alibaba.nacos.api.config.ConfigService;
import org.springframework.boot.bootstrap.BootstrapContext;

/** The Nacos client's view of its server. Only loaded when the Nacos client is on the classpath. */
final class NacosServer {

    private static final String UP = "UP";

    private final ConfigService configService;

    NacosServer(ConfigService configService) {
        this.configService = configService;
    }

    /** The config service the Nacos import used at start-up, or null when none was created. */
    static NacosServer of(BootstrapContext context) {
        if (!context.isRegistered(NacosConfigManager.class)) {
            return null;
        }
        return new NacosServer(context.get(NacosConfigManager.class).getConfigService());
    }

    static NacosServer of(NacosConfigManager manager) {
        return new NacosServer(manager.getConfigService());
    }

    /** Whether the client is connected to a server. */
    boolean up() {
        try {
            return UP.equals(configService.getServerStatus());
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Waits up to {@code timeoutMs} for a connection (the client connects in the background after a failure). */
    boolean awaitUp(long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (!up()) {
            if (System.nanoTime() >= deadline) {
                return false;
            }
            Thread.sleep(100);
        }
        return true;
    }
}
