package io.delayrelay.app.config.nacos;

import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.context.logging.LoggingApplicationListener;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.util.ClassUtils;

/**
 * No silent start without the config center. Once the environment is read (with the Nacos import, when the
 * {@code nacos} profile configures one): puts Nacos's values above local files ({@link NacosPrecedence}), then
 * checks that the client reached its server and that every imported data id had content. If not, start-up fails
 * with one line naming server and data id, or, with {@code relay.nacos.optional=true}, goes on with local
 * configuration after a WARN naming them (the Nacos client keeps reconnecting; a data id that appears is applied).
 * Runs once per start, not on refreshes.
 */
public class NacosStartupCheck implements ApplicationListener<ApplicationEnvironmentPreparedEvent>, Ordered {

    private static final Logger log = LoggerFactory.getLogger(NacosStartupCheck.class);
    static final boolean NACOS_PRESENT = ClassUtils.isPresent(
            "com.alibaba.cloud.nacos.NacosConfigManager", NacosStartupCheck.class.getClassLoader());

    @Override
    public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
        ConfigurableEnvironment environment = event.getEnvironment();
        if (!NACOS_PRESENT || !NacosImport.active(environment)) {
            return;
        }
        List<NacosImport> imports = NacosImport.of(environment);
        NacosPrecedence.apply(environment, imports);
        String server = NacosImport.serverAddr(environment);
        String namespace = NacosImport.namespace(environment);
        NacosServer nacos = NacosServer.of(event.getBootstrapContext());
        long timeout = environment.getProperty("spring.cloud.nacos.config.timeout", Long.class, 3000L);
        String problem = null;
        if (nacos == null || !awaitUp(nacos, timeout)) {
            problem = "Nacos server " + server + " (namespace " + namespace + ") is unreachable: cannot load "
                    + names(imports);
        } else {
            List<NacosImport> missing =
                    imports.stream().filter(i -> !loaded(environment, i)).toList();
            if (!missing.isEmpty()) {
                problem = "Nacos " + names(missing) + " is missing or empty on server " + server + " (namespace "
                        + namespace + ")";
            }
        }
        if (problem == null) {
            log.info(
                    "configuration from Nacos server {} (namespace {}): {}; its values win over local files",
                    server,
                    namespace,
                    names(imports));
            return;
        }
        if (Binder.get(environment).bind("relay.nacos.optional", Boolean.class).orElse(false)) {
            log.warn(
                    "{}; relay.nacos.optional=true: starting on local configuration and retrying in the background",
                    problem);
            return;
        }
        throw new ConfigCenterUnavailableException(problem);
    }

    private static boolean awaitUp(NacosServer nacos, long timeoutMs) {
        try {
            return nacos.awaitUp(timeoutMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static boolean loaded(ConfigurableEnvironment environment, NacosImport nacosImport) {
        return environment.getPropertySources().stream()
                .anyMatch(s -> s.getName().startsWith(nacosImport.propertySourcePrefix()));
    }

    private static String names(List<NacosImport> imports) {
        return String.join(", ", imports.stream().map(NacosImport::toString).toList());
    }

    /** After logging is set up, so the WARN goes to the relay's log. */
    @Override
    public int getOrder() {
        return LoggingApplicationListener.DEFAULT_ORDER + 1;
    }
}
