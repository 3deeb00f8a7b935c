package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Timeouts of TestPythonClients: the first run downloads the pinned wheels
// (a few MB; pip keeps them in its own cache), later runs reuse the venv.
const (
	pythonInstallTimeout = 5 * time.Minute
	pythonTestTimeout    = 3 * time.Minute
)

// TestPythonClients runs compat/python (confluent-kafka, i.e. librdkafka
// from Python, and aiokafka under pytest; versions pinned in
// compat/python/requirements.txt) against a fresh broker. The packages are
// installed into a venv under the Go build cache, keyed by the requirements
// and the interpreter, so later runs install nothing. Without python3 (with
// its venv module) it skips, except under CI (GREGOR_CI=1), where it fails.
//
// A second, single-node broker with a SASL_PLAINTEXT listener offering
// OAUTHBEARER (the unsecured-token validator) serves the OAUTHBEARER test
// (GREGOR_OAUTH_BOOTSTRAP). KIP-848 heartbeats are every 500ms, so the
// group.protocol=consumer test sees assignment changes quickly.
func TestPythonClients(t *testing.T) {
	python := pythonVenv(t)
	b := newBroker(t, noDelay, "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500", "schema.registry.listeners=http://127.0.0.1:0")
	registry := b.schemaRegistryURL(t)
	oauth, oauthAddr := oauthBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), pythonTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
		"--durations=5", "-o", "console_output_style=classic", "--rootdir=.", ".")
	cmd.Dir = filepath.Join(moduleRoot, "compat", "python")
	cmd.Env = append(os.Environ(),
		"GREGOR_BOOTSTRAP="+b.bootstrap(),
		"GREGOR_RF="+strconv.Itoa(int(replicationFactor())),
		"GREGOR_OAUTH_BOOTSTRAP="+oauthAddr,
		"GREGOR_SCHEMA_REGISTRY="+registry,
		"PYTHONDONTWRITEBYTECODE=1",
	)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("pytest in compat/python: %v\n%s", time.Since(start).Round(100*time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("pytest in compat/python: %v (ctx %v)", err, ctx.Err())
	}
	if !oauth.waitLog("listener=SASL_PLAINTEXT principal=User:alice mechanism=OAUTHBEARER", 10*time.Second) {
		t.Error("the OAUTHBEARER broker did not log librdkafka's principal")
	}
}

// schemaRegistryURL is the URL of the broker's schema registry, from its
// log line; in cluster mode node 1's (every node serves one, over the same
// _schemas log), from its log file.
func (b *broker) schemaRegistryURL(t *testing.T) string {
	t.Helper()
	var lines []string
	if b.cluster != nil {
		data, err := os.ReadFile(b.cluster.Node(1).logPath)
		if err != nil {
			t.Fatal(err)
		}
		lines = strings.Split(string(data), "\n")
	} else {
		b.logMu.Lock()
		lines = slices.Clone(b.logs)
		b.logMu.Unlock()
	}
	for _, l := range lines {
		if m := registryLineRE.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	t.Fatal("the broker logged no schema registry URL")
	return ""
}

var registryLineRE = regexp.MustCompile(`msg="schema registry" (?:node=\d+ )?url=(\S+)`)

// oauthBroker starts a broker with a PLAINTEXT and a SASL_PLAINTEXT
// listener, OAUTHBEARER enabled, and returns it with the SASL_PLAINTEXT
// address.
func oauthBroker(t *testing.T) (*broker, string) {
	t.Helper()
	b := startBroker(t, t.TempDir(), "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms=OAUTHBEARER", "auto.create.topics.enable=true")
	addr := b.listenerAddrs()["SASL_PLAINTEXT"]
	if addr == "" {
		t.Fatal("no address logged for the SASL_PLAINTEXT listener")
	}
	return b, addr
}

// pythonVenv returns the python of a venv holding compat/python's
// requirements, creating it on first use in
// $GOCACHE/gregor-compat-python/<hash> (installCache).
func pythonVenv(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("GREGOR_CI") == "1" {
			t.Fatalf("%s: CI must run the Python compat tests (make deps installs python3 and python3-venv)", msg)
		}
		t.Skipf("%s; install python3 and python3-venv (make deps) to run the Python compat tests", msg)
	}
	base, err := exec.LookPath("python3")
	if err != nil {
		missing("python3 not found on the PATH (%v)", err)
	}
	// The interpreter's identity: a venv is tied to the python it was made with.
	ident, err := exec.Command(base, "-c", "import sys; print(sys.version); print(sys.base_prefix)").Output()
	if err != nil {
		missing("%s does not run: %v", base, err)
	}
	if err := exec.Command(base, "-c", "import venv, ensurepip").Run(); err != nil {
		missing("%s lacks the venv or ensurepip module (%v)", base, err)
	}
	reqPath := filepath.Join(moduleRoot, "compat", "python", "requirements.txt")
	req, err := os.ReadFile(reqPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := installCache{
		cache:   "gregor-compat-python",
		key:     append(append([]byte(base+"\n"), ident...), req...),
		marker:  filepath.Join("bin", "python"),
		what:    "a venv of " + reqPath,
		timeout: pythonInstallTimeout,
		probe: func(dir string) error {
			// Its packages still import (the base interpreter may have
			// changed underneath).
			out, err := exec.Command(filepath.Join(dir, "bin", "python"), "-c", "import confluent_kafka, aiokafka, pytest").CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w\n%s", err, out)
			}
			return nil
		},
		install: func(ctx context.Context, tmp string) {
			run := func(name string, args ...string) {
				t.Helper()
				cmd := exec.CommandContext(ctx, name, args...)
				cmd.WaitDelay = 10 * time.Second
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v (ctx %v)\n%s", name, strings.Join(args, " "), err, ctx.Err(), out)
				}
			}
			run(base, "-m", "venv", tmp)
			run(filepath.Join(tmp, "bin", "python"), "-m", "pip", "install", "-q",
				"--disable-pip-version-check", "--no-input", "-r", reqPath)
		},
	}.dir(t)
	return filepath.Join(dir, "bin", "python")
}
