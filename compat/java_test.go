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
// the 4.3.1 Connect plugins) into ~/.m2; later runs are offline.
const javaTimeout = 15 * time.Minute

// TestJavaClients runs compat/java (kafka-clients 4.x under JUnit 5, see
// compat/java/README.md) with `mvn -q -B test`, then Kafka Connect and
// MirrorMaker 2 with `mvn -q -B test -Pconnect` (their plugins exist on
// Maven Central only up to 4.3.1, so they run on their own profile) — the
// same commands as `make compat-java` — against the broker binary TestMain
// built. Without mvn on the PATH it skips, except under CI (GREGOR_CI=1),
// where it fails.
func TestJavaClients(t *testing.T) {
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
	for _, args := range [][]string{{"-q", "-B", "test"}, {"-q", "-B", "test", "-Pconnect"}} {
		ctx, cancel := context.WithTimeout(context.Background(), javaTimeout)
		cmd := exec.CommandContext(ctx, mvn, args...)
		cmd.Dir = filepath.Join(moduleRoot, "compat", "java")
		cmd.Env = append(os.Environ(), "GREGOR_BIN="+gregorBin)
		cmd.WaitDelay = 10 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err = cmd.Run()
		what := "mvn " + strings.Join(args, " ") + " in compat/java"
		t.Logf("%s: %v", what, time.Since(start).Round(time.Second))
		if err != nil {
			t.Errorf("%s: %v (ctx %v)\n%s", what, err, ctx.Err(), out.String())
		}
		cancel()
	}
}
