package compat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// javaTimeout bounds each Maven run: the first run downloads kafka-clients,
// kafka-streams, connect-runtime and JUnit (and, for the connect profile,
// the 4.3.1 Connect plugins; for the registry profile, Flink's
// flink-sql-avro-confluent-registry and flink-core) into ~/.m2; later runs
// are offline.
const javaTimeout = 15 * time.Minute

// TestJavaClients runs compat/java (kafka-clients 4.x under JUnit 5, see
// compat/java/README.md) with `mvn -q -B test`, then Kafka Connect and
// MirrorMaker 2 with `mvn -q -B test -Pconnect` (their plugins exist on
// Maven Central only up to 4.3.1, so they run on their own profile) — the
// same commands as `make compat-java` — against the broker binary TestMain
// built. Without mvn on the PATH it skips, except under CI (GREGOR_CI=1),
// where it fails.
func TestJavaClients(t *testing.T) {
	mvn := javaMaven(t)
	for _, args := range [][]string{{"-q", "-B", "test"}, {"-q", "-B", "test", "-Pconnect"}} {
		runMaven(t, mvn, args...)
	}
}

// TestJavaSchemaRegistrySerde runs compat/java's SchemaRegistrySerdeTest
// with `mvn -q -B test -Pregistry` (as `make compat-java` does): Apache
// Flink's Confluent-registry Avro serializer and deserializer, which use
// Confluent's own schema registry client (bundled in
// flink-sql-avro-confluent-registry on Maven Central), against the
// broker's schema registry, records through kafka-clients. On its own
// profile because that bundle carries classes the other tests' clients
// have in other versions. Skips and fails as TestJavaClients does.
func TestJavaSchemaRegistrySerde(t *testing.T) {
	runMaven(t, javaMaven(t), "-q", "-B", "test", "-Pregistry")
}

// javaMaven returns mvn, skipping the test in cluster mode (the Java tests
// start their own single-node broker) and without mvn, except under CI.
func javaMaven(t *testing.T) string {
	t.Helper()
	if clusterMode {
		t.Skip("the Java tests start their own single-node broker; nothing differs in cluster mode")
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		if os.Getenv("GREGOR_CI") == "1" {
			t.Fatalf("mvn not found on the PATH (%v): CI must run the Java compat tests; install Maven and a JDK 17+", err)
		}
		t.Skipf("mvn not found on the PATH (%v); install Maven and a JDK 17+ to run the Java compat tests", err)
	}
	return mvn
}

// runMaven runs mvn with args in compat/java against the broker binary
// TestMain built, failing the test (and going on) if it fails.
func runMaven(t *testing.T, mvn string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), javaTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, args...)
	cmd.Dir = filepath.Join(moduleRoot, "compat", "java")
	cmd.Env = append(os.Environ(), "GREGOR_BIN="+gregorBin)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	what := "mvn " + strings.Join(args, " ") + " in compat/java"
	t.Logf("%s: %v", what, time.Since(start).Round(time.Second))
	if err != nil {
		t.Errorf("%s: %v (ctx %v)\n%s", what, err, ctx.Err(), out.String())
	}
}
