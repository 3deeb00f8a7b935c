package gregor.compat.apicurio;

import java.util.List;

import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;

/**
 * ConfigIndex stands in for apicurio-common-app-components-config-index, a
 * Quarkus extension whose deployment jar is not on Maven Central: it produces
 * the bean that extension would, an index of dynamic config properties, here
 * empty (the registry then reads every property from its static config).
 */
@ApplicationScoped
public class ConfigIndex {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
