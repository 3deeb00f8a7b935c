package gregor.compat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One gregor process on 127.0.0.1:0 serving a data directory, started and
 * stopped by a test class. The binary is built once per JVM with
 * {@code go build -o compat/java/target/gregor ./cmd/gregor} from the
 * repository root, unless the system property gregor.bin (GREGOR_BIN) names
 * one. The bound address comes from the broker's {@code msg=listening addr=}
 * log line, as in compat/harness_test.go.
 */
final class Gregor implements AutoCloseable {
    static final Duration BUILD_TIMEOUT = Duration.ofMinutes(5);
    static final Duration LISTEN_TIMEOUT = Duration.ofSeconds(20);
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(15);
    private static final Pattern LISTENING = Pattern.compile("msg=listening addr=(\\S+)");
    private static final Pattern REGISTRY = Pattern.compile("msg=\"schema registry\" url=(\\S+)");

    private static Path binary;

    final Path dataDir;
    private final List<String> sets;
    private final boolean ownsDataDir;
    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private Process process;
    private String addr;

    private Gregor(Path dataDir, boolean ownsDataDir, List<String> sets) {
        this.dataDir = dataDir;
        this.ownsDataDir = ownsDataDir;
        this.sets = List.copyOf(sets);
    }

    /** Starts a broker on a fresh temporary data directory with the given key=value properties. */
    static Gregor start(String... sets) throws Exception {
        Gregor g = new Gregor(Files.createTempDirectory("gregor-java-"), true, List.of(sets));
        g.restart();
        return g;
    }

    /** The bootstrap address, 127.0.0.1:PORT; it changes on every restart. */
    String bootstrap() {
        return addr;
    }

    /** Base client properties pointing at this broker. */
    Properties props() {
        Properties p = new Properties();
        p.put("bootstrap.servers", addr);
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    /** Stops the broker (if running) and starts it again on the same data directory. */
    synchronized void restart() throws Exception {
        stopProcess();
        List<String> cmd = new ArrayList<>(List.of(binary().toString(),
                "--listen", "127.0.0.1:0", "--data-dir", dataDir.toString()));
        for (String s : sets) {
            cmd.add("--set");
            cmd.add(s);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        process = p;
        CompletableFuture<String> listening = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    logs.add(line);
                    Matcher m = LISTENING.matcher(line);
                    if (m.find()) {
                        listening.complete(m.group(1));
                    }
                }
            } catch (IOException e) {
                // the process went away
            }
            listening.completeExceptionally(new IllegalStateException("gregor exited before msg=listening: " + tail()));
        }, "gregor-stderr");
        reader.setDaemon(true);
        reader.start();
        try {
            addr = listening.get(LISTEN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            stopProcess();
            throw new IllegalStateException("gregor printed no msg=listening line within " + LISTEN_TIMEOUT + ": " + tail(), e);
        }
        if (!addr.startsWith("127.0.0.1:")) {
            throw new IllegalStateException("listening addr = " + addr + ", want 127.0.0.1:PORT");
        }
    }

    /**
     * The URL of the broker's schema registry (schema.registry.listeners),
     * from its {@code msg="schema registry" url=} log line, which comes
     * before msg=listening.
     */
    String schemaRegistryUrl() {
        synchronized (logs) {
            for (String l : logs) {
                Matcher m = REGISTRY.matcher(l);
                if (m.find()) {
                    return m.group(1);
                }
            }
        }
        throw new IllegalStateException("gregor logged no schema registry URL: " + tail());
    }

    /** The last log lines, for failure messages. */
    String tail() {
        synchronized (logs) {
            return String.join("\n", logs.subList(Math.max(0, logs.size() - 30), logs.size()));
        }
    }

    private void stopProcess() throws InterruptedException {
        if (process == null) {
            return;
        }
        process.destroy(); // SIGTERM: graceful shutdown
        if (!process.waitFor(SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            process.waitFor(SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }
        process = null;
    }

    @Override
    public synchronized void close() throws Exception {
        stopProcess();
        if (ownsDataDir) {
            try (Stream<Path> s = Files.walk(dataDir)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    /** The gregor binary, built on first use. */
    static synchronized Path binary() throws Exception {
        if (binary != null) {
            return binary;
        }
        String given = System.getProperty("gregor.bin", "");
        if (!given.isEmpty() && !given.startsWith("${")) {
            binary = Paths.get(given).toAbsolutePath();
            return binary;
        }
        Path repo = Paths.get(System.getProperty("gregor.repo", "../..")).toAbsolutePath().normalize();
        if (!Files.exists(repo.resolve("go.mod"))) {
            throw new IllegalStateException("no go.mod in " + repo + " (set -Dgregor.repo or GREGOR_BIN)");
        }
        Path out = repo.resolve("compat/java/target/gregor");
        Process p = new ProcessBuilder("go", "build", "-o", out.toString(), "./cmd/gregor")
                .directory(repo.toFile()).redirectErrorStream(true).start();
        String output;
        CompletableFuture<String> text = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return e.toString();
            }
        });
        if (!p.waitFor(BUILD_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("go build ./cmd/gregor took more than " + BUILD_TIMEOUT);
        }
        output = text.get(10, TimeUnit.SECONDS);
        if (p.exitValue() != 0) {
            throw new IllegalStateException("go build ./cmd/gregor failed:\n" + output);
        }
        binary = out;
        return binary;
    }
}
