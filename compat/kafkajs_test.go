package compat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Timeouts of TestKafkajsSecurity and TestKafkajsSchemaRegistry: the first
// run downloads kafkajs and @kafkajs/confluent-schema-registry with its
// dependencies (23 packages, 16 MB installed; npm keeps them in its own cache),
// later runs reuse the installed copy.
const (
	kafkajsInstallTimeout = 3 * time.Minute
	kafkajsTestTimeout    = 2 * time.Minute
)

// TestKafkajsSecurity runs compat/kafkajs/security.js (kafkajs 2.2.4, pinned
// in compat/kafkajs/package-lock.json) against a fresh broker's SASL_SSL and
// SSL listeners: a round trip (producer offsets, a consumer group reading
// exact keys, values, headers and offsets, committed offsets read back) over
// SASL_SSL with PLAIN, SCRAM-SHA-512 and OAUTHBEARER (an unsecured token)
// and over SSL with a client certificate; then a wrong PLAIN and SCRAM
// password and an expired token, each of which kafkajs must report as a
// KafkaJSSASLAuthenticationError. kafkajs is installed under the Go build
// cache, keyed by the lock file and node's version, so later runs install
// nothing. Without node and npm it skips, except under CI (GREGOR_CI=1),
// where it fails.
func TestKafkajsSecurity(t *testing.T) {
	node, modules := kafkajsModules(t)
	pki := newSecPKI(t)
	_, crt, key := pki.issue(t, "kafkajs", "kafkajs")
	b, addrs := secureBroker(t, pki, "group.initial.rebalance.delay.ms=0")

	ctx, cancel := context.WithTimeout(context.Background(), kafkajsTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "security.js")
	cmd.Dir = filepath.Join(moduleRoot, "compat", "kafkajs")
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"GREGOR_SASL_SSL="+addrs["SASL_SSL"],
		"GREGOR_SSL="+addrs["SSL"],
		"GREGOR_CA="+pki.caPath,
		"GREGOR_CLIENT_CERT="+crt,
		"GREGOR_CLIENT_KEY="+key,
		"GREGOR_USER="+secUser,
		"GREGOR_PASS="+secPass,
	)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("node security.js: %v\n%s%s", time.Since(start).Round(100*time.Millisecond), stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("node security.js: %v (ctx %v)", err, ctx.Err())
	}

	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if name, detail, ok := strings.Cut(strings.TrimPrefix(l, "ok "), " "); ok && strings.HasPrefix(l, "ok ") {
			got[name] = detail
		}
	}
	for name, want := range map[string]string{
		"sasl-ssl-plain":         "10 records, committed 0=5,1=5",
		"sasl-ssl-scram-sha-512": "10 records, committed 0=5,1=5",
		"sasl-ssl-oauthbearer":   "10 records, committed 0=5,1=5",
		"ssl":                    "10 records, committed 0=5,1=5",
		// kafkajs's error with the broker's message
		// (SaslAuthenticate's errorMessage) in it.
		"plain-wrong-password": "KafkaJSSASLAuthenticationError: SASL PLAIN authentication failed: " +
			"Authentication failed: Invalid username or password",
		"scram-sha-512-wrong-password": "KafkaJSSASLAuthenticationError: SASL SCRAM SHA512 authentication failed: " +
			"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		// kafkajs takes the error challenge for success (see
		// refusedToken in security.js); the broker then closes the
		// connection at its next request.
		"oauthbearer-expired": "KafkaJSNumberOfRetriesExceeded: Closed connection",
	} {
		if got[name] != want {
			t.Errorf("case %s: got %q, want %q", name, got[name], want)
		}
	}
	// The expired token was refused as such, and nothing was written
	// with it.
	if !b.waitLog(`msg="OAUTHBEARER token rejected" err="the token expired at `, 10*time.Second) {
		t.Error("the broker did not log the expired token's rejection")
	}
	topics, err := kadm.NewClient(kgoClient(t, addrs["PLAINTEXT"])).ListTopics(testCtx(t, 20*time.Second))
	must(t, err)
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, "kafkajs-oauthbearer-expired-") {
			t.Errorf("topic %s was created with an expired token", name)
		}
	}
}

// TestKafkajsSchemaRegistry runs compat/kafkajs/schema_registry.js
// (@kafkajs/confluent-schema-registry 3.9.0 with kafkajs 2.2.4, pinned in
// compat/kafkajs/package-lock.json) against a fresh broker with its schema
// registry on. For an Avro, a Protobuf and a JSON Schema schema it
// registers the schema under <topic>-value (the library then sets the
// subject to BACKWARD), registers it again (same id), reads it back with
// getLatestSchemaId and getRegistryIdBySchema, encodes three records with
// registry.encode and produces them with kafkajs to a topic with
// confluent.value.schema.validation=true; an Avro change without a default
// must be refused with Confluent's 409 and message, a compatible one gets
// the next id and becomes the latest, and an Avro id on the JSON topic is
// refused by the broker (INVALID_RECORD). Then a consumer group reads every
// record back and a second SchemaRegistry (nothing cached) decodes the exact
// payloads, the old Avro records also with the evolved schema as reader
// (the new field's default). The test compares the script's lines exactly,
// then checks the subjects over the REST API and the JSON topic's end
// offset (the refused record is not there).
func TestKafkajsSchemaRegistry(t *testing.T) {
	node, modules := kafkajsModules(t)
	b := newBroker(t, noDelay, "schema.registry.listeners=http://127.0.0.1:0")
	registry := b.schemaRegistryURL(t)

	ctx, cancel := context.WithTimeout(context.Background(), kafkajsTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "schema_registry.js")
	cmd.Dir = filepath.Join(moduleRoot, "compat", "kafkajs")
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"GREGOR_BOOTSTRAP="+b.bootstrap(),
		"GREGOR_SCHEMA_REGISTRY="+registry,
	)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("node schema_registry.js: %v\n%s%s", time.Since(start).Round(100*time.Millisecond), stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("node schema_registry.js: %v (ctx %v)", err, ctx.Err())
	}

	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{
		// Confluent's answer to an incompatible registration (409,
		// error_code 409), with the library's client id before it.
		`ok avro-incompatible ResponseError 409 gregor-compat - Schema being registered is incompatible with an earlier schema for subject "sr-avro-value", ` +
			`details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'phone' in the new schema has no default value and is missing in the old schema', path:'/fields/3'}]`,
		`ok wrong-subject KafkaJSProtocolError INVALID_RECORD This record has failed the validation on broker and hence be rejected`,
		`ok avro id=1 again=1 latest=1 lookup=1 decoded {"name":"ada","age":36,"email":"ada@example.com"} {"name":"alan","age":41,"email":null} ` +
			`{"name":"grace","age":85,"email":null} {"name":"edsger","age":72,"email":null,"country":"nl"}`,
		`ok protobuf id=2 again=2 latest=2 lookup=2 decoded {"id":"o-1","quantity":2,"tags":["red","large"]} {"id":"o-2","quantity":7,"tags":["blue"]} ` +
			`{"id":"o-3","quantity":1,"tags":["green","small","gift"]}`,
		`ok json id=3 again=3 latest=3 lookup=3 decoded {"sku":"p-1","price":9.5,"tags":["new"]} {"sku":"p-2","price":120} {"sku":"p-3","price":0.25,"tags":["sale","last"]}`,
		`ok avro-evolution id=4 latest=4 read as {"name":"ada","age":36,"email":"ada@example.com","country":"unknown"} ` +
			`{"name":"alan","age":41,"email":null,"country":"unknown"} {"name":"grace","age":85,"email":null,"country":"unknown"} ` +
			`{"name":"edsger","age":72,"email":null,"country":"nl"}`,
	}
	if len(got) != len(want) {
		t.Errorf("schema_registry.js printed %d lines, want %d", len(got), len(want))
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}

	// The registry lists the three subjects; the JSON topic holds only
	// its three records.
	req, err := http.NewRequestWithContext(testCtx(t, 10*time.Second), http.MethodGet, registry+"/subjects", nil)
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)
	if want := `["sr-avro-value","sr-json-value","sr-protobuf-value"]`; resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != want {
		t.Errorf("GET /subjects: %s %s, want 200 %s", resp.Status, body, want)
	}
	ends, err := kadm.NewClient(kgoClient(t, b.addr)).ListEndOffsets(testCtx(t, 20*time.Second), "sr-json")
	must(t, err)
	if o, ok := ends.Lookup("sr-json", 0); !ok || o.Err != nil || o.Offset != 3 {
		t.Errorf("sr-json end offset: %+v, want 3", o)
	}
}

// kafkajsModules returns node and a node_modules directory holding
// compat/kafkajs's locked packages, installing them on first use into
// $GOCACHE/gregor-compat-kafkajs/<hash>/node_modules with npm ci (which
// takes them from npm's cache when it has them; installCache).
func kafkajsModules(t *testing.T) (string, string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("GREGOR_CI") == "1" {
			t.Fatalf("%s: CI must run the kafkajs compat tests (make deps installs node and npm)", msg)
		}
		t.Skipf("%s; install node and npm (make deps) to run the kafkajs compat tests", msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found on the PATH (%v)", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing("npm not found on the PATH (%v)", err)
	}
	version, err := exec.Command(node, "--version").Output()
	if err != nil {
		missing("%s does not run: %v", node, err)
	}
	src := filepath.Join(moduleRoot, "compat", "kafkajs")
	var files [][]byte
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	// The installed copy is usable when kafkajs loads from it, through
	// NODE_PATH only: node runs in the cache's root, above it.
	usable := func(modules string) error {
		cmd := exec.Command(node, "-e", `require("kafkajs"); require("@kafkajs/confluent-schema-registry"); process.stdout.write(require("kafkajs/package.json").version)`)
		cmd.Dir = filepath.Dir(filepath.Dir(modules))
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
		out, err := cmd.CombinedOutput()
		if err == nil && string(out) != "2.2.4" {
			err = fmt.Errorf("kafkajs %s, want 2.2.4", out)
		}
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	}
	dir := installCache{
		cache:   "gregor-compat-kafkajs",
		key:     bytes.Join(append([][]byte{version}, files...), []byte{0}),
		marker:  "node_modules",
		what:    "compat/kafkajs's packages",
		timeout: kafkajsInstallTimeout,
		probe:   func(dir string) error { return usable(filepath.Join(dir, "node_modules")) },
		install: func(ctx context.Context, tmp string) {
			for i, f := range []string{"package.json", "package-lock.json"} {
				if err := os.WriteFile(filepath.Join(tmp, f), files[i], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.CommandContext(ctx, npm, "ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
			cmd.Dir = tmp
			cmd.WaitDelay = 10 * time.Second
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("npm ci in %s: %v (ctx %v)\n%s", tmp, err, ctx.Err(), out)
			}
			if err := usable(filepath.Join(tmp, "node_modules")); err != nil {
				t.Fatalf("npm ci in %s installed no usable kafkajs: %v", tmp, err)
			}
		},
	}.dir(t)
	return node, filepath.Join(dir, "node_modules")
}
