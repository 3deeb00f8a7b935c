package gregor.compat;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * Turns Kafka's Exit.exit and Exit.halt (which Connect and MirrorMaker call
 * when a worker fails to start) into exceptions, so a failure fails the test
 * instead of ending the JVM. The class moved between releases
 * (org.apache.kafka.common.utils.Exit in 4.3, ...utils.internals.Exit in
 * 4.4), hence reflection.
 */
final class KafkaExit {
    private static final String[] NAMES = {
        "org.apache.kafka.common.utils.internals.Exit", "org.apache.kafka.common.utils.Exit",
    };

    private KafkaExit() {
    }

    static void trap() throws Exception {
        Class<?> exit = exitClass();
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object throwing = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure}, (proxy, m, args) -> {
            if (m.getDeclaringClass() == Object.class) {
                return m.getName().equals("hashCode") ? System.identityHashCode(proxy)
                        : m.getName().equals("equals") ? proxy == args[0] : "KafkaExit.trap";
            }
            throw new IllegalStateException("Kafka called Exit." + m.getName() + "(" + args[0] + ", " + args[1] + ")");
        });
        exit.getMethod("setExitProcedure", procedure).invoke(null, throwing);
        exit.getMethod("setHaltProcedure", procedure).invoke(null, throwing);
    }

    static void reset() throws Exception {
        Class<?> exit = exitClass();
        for (String name : new String[] {"resetExitProcedure", "resetHaltProcedure"}) {
            Method m = exit.getMethod(name);
            m.invoke(null);
        }
    }

    private static Class<?> exitClass() throws ClassNotFoundException {
        for (String n : NAMES) {
            try {
                return Class.forName(n);
            } catch (ClassNotFoundException e) {
                // try the next release's name
            }
        }
        throw new ClassNotFoundException("no Kafka Exit class: " + String.join(", ", NAMES));
    }
}
