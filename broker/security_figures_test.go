package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSecurityFigures measures what TLS costs: produce and consume
// throughput over PLAINTEXT beside SSL, and the rate of TLS handshakes and
// of SASL_SSL SCRAM-SHA-256 logins. Skipped unless
// GREGOR_SECURITY_FIGURES=1 (it is a measurement, not a check); the figures
// are in docs/benchmarks.md.
func TestSecurityFigures(t *testing.T) {
	if os.Getenv("GREGOR_SECURITY_FIGURES") != "1" {
		t.Skip("GREGOR_SECURITY_FIGURES=1 runs it")
	}
	pki := newTestPKI(t)
	dir := t.TempDir()
	if err := AddUser(dir, "alice", config.ScramSHA256, "alice-secret", 0); err != nil {
		t.Fatal(err)
	}
	b, addrs := secureBroker(t, pki, dir, nil)
	const n, size = 200_000, 1024
	value := bytes.Repeat([]byte("v"), size)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, lis := range []string{"PLAINTEXT", "SSL"} {
		var opts []kgo.Opt
		if lis == "SSL" {
			opts = append(opts, kgo.DialTLSConfig(pki.clientTLS()))
		}
		topic := "figures-" + lis
		p := newClient(t, addrs[lis], append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
		start := time.Now()
		for range n {
			p.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		prod := time.Since(start)
		c := newClient(t, addrs[lis], append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16<<20))...)
		start = time.Now()
		for got := 0; got < n; {
			fs := c.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			got += fs.NumRecords()
		}
		cons := time.Since(start)
		mb := float64(n*size) / (1 << 20)
		t.Logf("%-9s produce %d x %d B: %6.1f MiB/s (%s); consume: %6.1f MiB/s (%s)", lis, n, size, mb/prod.Seconds(), prod.Round(time.Millisecond), mb/cons.Seconds(), cons.Round(time.Millisecond))
	}
	const dials = 300
	cfg := pki.clientTLS()
	start := time.Now()
	for range dials {
		conn, err := tls.Dial("tcp", addrs["SSL"], cfg)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	el := time.Since(start)
	t.Logf("TLS handshakes (ECDSA P-256, TLS 1.3, one client at a time): %.0f/s", dials/el.Seconds())
	const logins = 100
	start = time.Now()
	for range logins {
		if err := pingErr(t, addrs["SASL_SSL"], kgo.DialTLSConfig(cfg), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())); err != nil {
			t.Fatal(err)
		}
	}
	el = time.Since(start)
	t.Logf("SASL_SSL SCRAM-SHA-256 (4096 iterations) client connects+logins, one at a time: %.0f/s", logins/el.Seconds())
	t.Logf("stats: %+v", b.SecurityStats())
}
