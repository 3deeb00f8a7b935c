package gregor.compat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Three (or n) gregor processes forming a cluster on loopback, as
 * compat/cluster_harness_test.go starts them but without proxies: node ids
 * 1..n, each with a fixed PLAINTEXT listener and a CONTROLLER listener (its
 * embedded etcd member's peer address, listed in controller.quorum.voters),
 * both chosen free once, so that a node killed with SIGKILL comes back on
 * the same ports and data directory. Every process is killed at close, and
 * by the JVM's shutdown hook if the test JVM ends first.
 */
final class GregorCluster implements AutoCloseable {
    static final Duration LISTEN_TIMEOUT = Duration.ofSeconds(60);

    final List<Node> nodes = new ArrayList<>();
    private final String voters;
    private final List<String> sets;
    private final Thread hook = new Thread(this::killAll, "gregor-cluster-kill");

    /** One broker: its ports, data directory and current process. */
    final class Node {
        final int id;
        final int port;
        final int controllerPort;
        final Path dataDir;
        private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
        private Process process;
        private int runs;

        Node(int id, int port, int controllerPort, Path dataDir) {
            this.id = id;
            this.port = port;
            this.controllerPort = controllerPort;
            this.dataDir = dataDir;
        }

        String addr() {
            return "127.0.0.1:" + port;
        }

        /** Launches the process without waiting for it to listen. */
        synchronized CompletableFuture<Void> launch() throws Exception {
            runs++;
            List<String> cmd = new ArrayList<>(List.of(Gregor.binary().toString(), "--data-dir", dataDir.toString(),
                    "--set", "node.id=" + id,
                    "--set", "controller.quorum.voters=" + voters,
                    "--set", "listeners=PLAINTEXT://" + addr() + ",CONTROLLER://127.0.0.1:" + controllerPort,
                    "--set", "advertised.listeners=PLAINTEXT://" + addr(),
                    "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "--set", "controller.listener.names=CONTROLLER"));
            for (String s : sets) {
                cmd.add("--set");
                cmd.add(s);
            }
            logs.add("=== run " + runs);
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            process = p;
            CompletableFuture<Void> listening = new CompletableFuture<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        logs.add(line);
                        if (line.contains("msg=listening")) {
                            listening.complete(null);
                        }
                    }
                } catch (IOException e) {
                    // the process went away
                }
                listening.completeExceptionally(new IllegalStateException("node " + id + " exited before msg=listening:\n" + tail()));
            }, "gregor-" + id + "-log");
            reader.setDaemon(true);
            reader.start();
            return listening;
        }

        /** Starts the node again (after kill) and waits for it to listen. */
        void start() throws Exception {
            launch().get(LISTEN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }

        /** kill -9: SIGKILL, then waits until the process is gone. */
        synchronized void kill() throws InterruptedException {
            if (process == null) {
                return;
            }
            process.destroyForcibly();
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                throw new IllegalStateException("node " + id + " outlived SIGKILL by 15 s");
            }
            process = null;
        }

        synchronized boolean running() {
            return process != null && process.isAlive();
        }

        /** The last log lines, for failure messages. */
        String tail() {
            synchronized (logs) {
                return String.join("\n", logs.subList(Math.max(0, logs.size() - 40), logs.size()));
            }
        }
    }

    private GregorCluster(int n, List<String> sets) throws Exception {
        this.sets = List.copyOf(sets);
        List<String> v = new ArrayList<>();
        int[] ports = freePorts(2 * n);
        for (int i = 0; i < n; i++) {
            Node nd = new Node(i + 1, ports[2 * i], ports[2 * i + 1], Files.createTempDirectory("gregor-cluster-" + (i + 1) + "-"));
            nodes.add(nd);
            v.add(nd.id + "@127.0.0.1:" + nd.controllerPort);
        }
        voters = String.join(",", v);
    }

    /** Starts n nodes with the given key=value properties and waits until each listens. */
    static GregorCluster start(int n, String... sets) throws Exception {
        GregorCluster c = new GregorCluster(n, List.of(sets));
        Runtime.getRuntime().addShutdownHook(c.hook);
        try {
            // Every process before waiting for any: an etcd member may not
            // listen before a quorum of its peers is up.
            List<CompletableFuture<Void>> ls = new ArrayList<>();
            for (Node nd : c.nodes) {
                ls.add(nd.launch());
            }
            for (CompletableFuture<Void> l : ls) {
                l.get(LISTEN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (Exception e) {
            c.close();
            throw e;
        }
        return c;
    }

    Node node(int id) {
        return nodes.get(id - 1);
    }

    /** Every node's address, comma-separated. */
    String bootstrap() {
        List<String> s = new ArrayList<>();
        for (Node nd : nodes) {
            s.add(nd.addr());
        }
        return String.join(",", s);
    }

    Properties props() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap());
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    /** Every node's log tail. */
    String tails() {
        StringBuilder b = new StringBuilder();
        for (Node nd : nodes) {
            b.append("--- node ").append(nd.id).append(":\n").append(nd.tail()).append('\n');
        }
        return b.toString();
    }

    private void killAll() {
        for (Node nd : nodes) {
            try {
                nd.kill();
            } catch (Exception e) {
                // best effort
            }
        }
    }

    /**
     * Kills every node and deletes the data directories; each node's whole
     * log is kept in target/gregor-cluster-node-ID.log.
     */
    @Override
    public void close() throws Exception {
        killAll();
        for (Node nd : nodes) {
            synchronized (nd.logs) {
                Files.write(Path.of("target", "gregor-cluster-node-" + nd.id + ".log"), nd.logs, StandardCharsets.UTF_8);
            }
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // already shutting down
        }
        for (Node nd : nodes) {
            try (Stream<Path> s = Files.walk(nd.dataDir)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    /** Ports free now (all held open together, so distinct). */
    static int[] freePorts(int n) throws IOException {
        List<ServerSocket> ss = new ArrayList<>();
        int[] out = new int[n];
        try {
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
                ss.add(s);
                out[i] = s.getLocalPort();
            }
        } finally {
            for (ServerSocket s : ss) {
                s.close();
            }
        }
        return out;
    }
}
