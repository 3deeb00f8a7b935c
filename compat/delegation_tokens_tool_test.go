package compat

// Kafka's own kafka-delegation-tokens (org.apache.kafka.tools.
// DelegationTokenCommand, from the Kafka 4.4 jars compat/kafkaref
// resolves) against Gregor over SASL_PLAINTEXT with SCRAM: create a token
// with a renewer, describe it, renew and expire it, and a client
// authenticating with the token the tool printed.

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// tokenRow is one token of the tool's table: TOKENID HMAC OWNER
// REQUESTER RENEWERS ISSUEDATE EXPIRYDATE MAXDATE, whitespace-separated.
type tokenRow struct {
	id, hmac, owner, requester, renewers string
	expiry                               string
}

// tokenRows parses the rows under the tool's TOKENID header.
func tokenRows(t *testing.T, out string) []tokenRow {
	t.Helper()
	var rows []tokenRow
	header := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "TOKENID":
			header = true
		case header && len(f) == 8:
			rows = append(rows, tokenRow{id: f[0], hmac: f[1], owner: f[2], requester: f[3], renewers: f[4], expiry: f[6]})
		case header && len(f) > 0:
			t.Fatalf("a token row of %d fields: %q\n%s", len(f), l, out)
		}
	}
	if !header {
		t.Fatalf("no TOKENID header in:\n%s", out)
	}
	return rows
}

func TestKafkaDelegationTokens_Tool(t *testing.T) {
	singleNodeOnly(t, "a SASL listener of one node")
	dir := t.TempDir()
	for _, u := range []string{"alice", "bob"} {
		out, err := exec.Command(gregorBin, "users", "add", u, "--password", u+"-secret", "--mechanism", "SCRAM-SHA-256", "--data-dir", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("gregor users add %s: %v\n%s", u, err, out)
		}
	}
	b := startBroker(t, dir,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms=SCRAM-SHA-256",
		"delegation.token.secret.key=compat-secret")
	addr := b.listenerAddrs()["SASL_PLAINTEXT"]
	if addr == "" {
		t.Fatal("no SASL_PLAINTEXT listener logged")
	}
	props := func(user string) string {
		p := filepath.Join(t.TempDir(), user+".properties")
		text := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + user + `-secret";` + "\n"
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	alice, bob := props("alice"), props("bob")
	const class = "org.apache.kafka.tools.DelegationTokenCommand"
	tool := func(config string, args ...string) string {
		return kafkaTool(t, class, append([]string{"--bootstrap-server", addr, "--command-config", config}, args...)...)
	}

	out := tool(alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
	created := tokenRows(t, out)
	if len(created) != 1 || created[0].owner != "User:alice" || created[0].requester != "User:alice" || created[0].renewers != "[User:bob]" {
		t.Fatalf("create printed:\n%s", out)
	}
	tok := created[0]
	if !strings.Contains(out, "Created delegation token with tokenId : "+tok.id) {
		t.Errorf("create printed:\n%s", out)
	}

	// bob is a renewer: he sees it; alice owns it. Without
	// --owner-principal the tool sends an empty owner list, which Kafka
	// 4.4 answers with no tokens (KafkaApis: ownersListEmpty), so it
	// prints none; Gregor the same.
	for _, cfg := range []string{alice, bob} {
		if rows := tokenRows(t, tool(cfg, "--describe", "--owner-principal", "User:alice")); len(rows) != 1 || rows[0].id != tok.id || rows[0].hmac != tok.hmac {
			t.Fatalf("describe as %s: %+v, want %+v", filepath.Base(cfg), rows, tok)
		}
	}
	if rows := tokenRows(t, tool(alice, "--describe")); len(rows) != 0 {
		t.Fatalf("describe with no owner: %+v, want none as Kafka", rows)
	}

	// The token authenticates (SCRAM with tokenauth=true) as alice.
	hmac, err := base64.StdEncoding.DecodeString(tok.hmac)
	if err != nil || len(hmac) == 0 {
		t.Fatalf("the HMAC the tool printed, %q: %v", tok.hmac, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: tok.id, Pass: tok.hmac, IsToken: true}.AsSha256Mechanism()),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t, time.Minute)
	if err := cl.ProduceSync(ctx, kgo.StringRecord("via the tool's token")).FirstErr(); err != nil {
		t.Fatalf("produce authenticated by the token: %v", err)
	}

	out = tool(bob, "--renew", "--hmac", tok.hmac, "--renew-time-period", "-1")
	if !strings.Contains(out, "Completed renew operation.") {
		t.Fatalf("renew printed:\n%s", out)
	}
	out = tool(alice, "--expire", "--hmac", tok.hmac, "--expiry-time-period", "-1")
	if !strings.Contains(out, "Completed expire operation.") {
		t.Fatalf("expire printed:\n%s", out)
	}
	if rows := tokenRows(t, tool(alice, "--describe", "--owner-principal", "User:alice")); len(rows) != 0 {
		t.Fatalf("describe after the expiry: %+v", rows)
	}
}
