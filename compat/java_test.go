package compat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// javaTimeout bounds the whole Maven run: the first run downloads
// kafka-clients, kafka-streams, connect-runtime (compiled, not run: the
// Connect and MirrorMaker 2 classes run in `make compat-java` only) and
// JUnit into ~/.m2; later runs are offline.
const javaTimeout = 15 * time.Minute

// TestJavaClients runs compat/java (kafka-clients 4.x under JUnit 5, see
// compat/java/README.md) with `mvn -q -B test`, the same command as
// `make compat-java`, against the broker binary TestMain built. Without mvn
// on the PATH it skips, except under CI (GREGOR_CI=1), where it fails.
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
	ctx, cancel := context.WithTimeout(context.Background(), javaTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "test")
	cmd.Dir = filepath.Join(moduleRoot, "compat", "java")
	cmd.Env = append(os.Environ(), "GREGOR_BIN="+gregorBin)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("mvn -q -B test in compat/java: %v", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("mvn -q -B test in compat/java: %v (ctx %v)\n%s", err, ctx.Err(), out.String())
	}
}
