package io.delayrelay.app.ops;

import jakarta.servlet.Filter;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextConfiguration;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextType;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Adds the {@link RelayOpsTokenFilter} and the operator console to whichever context serves actuator: the
 * management child context when management runs on its own port, else the main one.
 */
@ManagementContextConfiguration(value = ManagementContextType.ANY, proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(Filter.class)
@ConditionalOnBean(RelayOpsEndpoint.class)
public class RelayOpsManagementContextConfiguration {

    @Bean
    public FilterRegistrationBean<RelayOpsTokenFilter> relayOpsTokenFilter(ObjectProvider<OperatorTokens> operators) {
        FilterRegistrationBean<RelayOpsTokenFilter> registration =
                new FilterRegistrationBean<>(new RelayOpsTokenFilter(operators.getObject()));
        registration.setName("relayOpsTokenFilter");
        registration.setOrder(Ordered.LOWEST_PRECEDENCE - 20);
        return registration;
    }

    /** Refuses relay endpoint writes with unknown fields (after the token filter, which logs refused tokens). */
    @Bean
    public FilterRegistrationBean<RelayOpsRequestCheck> relayOpsRequestCheck(Environment environment) {
        String basePath = environment.getProperty("management.endpoints.web.base-path", "/actuator");
        FilterRegistrationBean<RelayOpsRequestCheck> registration =
                new FilterRegistrationBean<>(new RelayOpsRequestCheck());
        registration.addUrlPatterns(basePath + "/relay/*");
        registration.setName("relayOpsRequestCheck");
        registration.setOrder(Ordered.LOWEST_PRECEDENCE - 10);
        return registration;
    }

    /** The operator console at {@value RelayConsoleServlet#PATH}, next to actuator (relay.ops.console-enabled). */
    @Bean
    @ConditionalOnProperty(prefix = "relay.ops", name = "console-enabled", matchIfMissing = true)
    public ServletRegistrationBean<RelayConsoleServlet> relayConsoleServlet(Environment environment) {
        String basePath = environment.getProperty("management.endpoints.web.base-path", "/actuator");
        ServletRegistrationBean<RelayConsoleServlet> registration = new ServletRegistrationBean<>(
                new RelayConsoleServlet(basePath), RelayConsoleServlet.PATH, RelayConsoleServlet.PATH + "/*");
        registration.setName("relayConsole");
        return registration;
    }
}
