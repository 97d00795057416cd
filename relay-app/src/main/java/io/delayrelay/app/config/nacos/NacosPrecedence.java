package io.delayrelay.app.config.nacos;

import java.util.ArrayList;
import java.util.List;

import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.PropertySource;

/**
 * A value in Nacos wins over the same key in local config files (the jar's {@code delay-relay.yaml}, a mounted
 * {@code application.yaml}, the Helm ConfigMap): that is what a config center is for; local files carry the base.
 * Spring places an import just above the file that declares it, below files read later, so this moves the Nacos
 * property sources above every config file. Command-line arguments, system properties and environment variables
 * still win (explicit per-process overrides). A refresh replaces sources in place, so the order holds.
 */
public final class NacosPrecedence {

    /** Spring Boot's name prefix of property sources read from config files. */
    static final String CONFIG_FILE_PREFIX = "Config resource ";

    private NacosPrecedence() {}

    /** Moves the property sources of the given imports above every config file; returns how many moved. */
    public static int apply(ConfigurableEnvironment environment, List<NacosImport> imports) {
        MutablePropertySources sources = environment.getPropertySources();
        List<PropertySource<?>> nacos = new ArrayList<>();
        String firstFile = null;
        for (PropertySource<?> source : sources) {
            if (isNacos(source.getName(), imports)) {
                nacos.add(source);
            } else if (firstFile == null && source.getName().startsWith(CONFIG_FILE_PREFIX)) {
                firstFile = source.getName();
            }
        }
        if (firstFile == null || nacos.isEmpty() || alreadyAbove(sources, nacos, firstFile)) {
            return 0;
        }
        for (PropertySource<?> source : nacos) {
            sources.remove(source.getName());
            sources.addBefore(firstFile, source);
        }
        return nacos.size();
    }

    private static boolean alreadyAbove(
            MutablePropertySources sources, List<PropertySource<?>> nacos, String firstFile) {
        int file = sources.precedenceOf(sources.get(firstFile));
        return nacos.stream().allMatch(s -> sources.precedenceOf(s) < file);
    }

    private static boolean isNacos(String name, List<NacosImport> imports) {
        return imports.stream().anyMatch(i -> name.startsWith(i.propertySourcePrefix()));
    }
}
