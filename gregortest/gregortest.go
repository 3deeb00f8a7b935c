// Package gregortest starts a real Gregor broker inside a Go test.
//
// # Usage
//
//	func TestMyConsumer(t *testing.T) {
//		b := gregortest.Start(t, gregortest.Topic("orders", 3, nil))
//		cl, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
//		…
//	}
//
// The broker listens on a random loopback port (127.0.0.1:0), keeps its data
// in t.TempDir(), and is closed by t.Cleanup when the test ends. Start takes
// a few milliseconds: there is no JVM, no container and no ZooKeeper.
//
// # Defaults
//
// Unlike a production broker, a test broker starts with
// group.initial.rebalance.delay.ms=0 (as Kafka's own test configs do), so
// consumer groups form at once, and logs nothing unless Logger is given.
// Every other property has Kafka's default; Prop sets any of them by its
// Kafka name.
//
// # Fault injection
//
// The returned Broker embeds *broker.Broker, so its fault-injection methods
// (InjectFault, ForceRebalance, ClearFaults) are at hand to test how a
// client copes with errors, latency and dropped connections.
package gregortest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/broker"
)

// Broker is a running test broker.
type Broker struct {
	*broker.Broker
	addr     string
	httpAddr string
	dataDir  string
	run      *running
	ownDir   bool // made by New: Close stops the broker and removes dataDir
}

// Addr returns the bootstrap address, host:port on 127.0.0.1.
func (b *Broker) Addr() string { return b.addr }

// HTTPAddr returns the admin HTTP listener's address (metrics, console,
// faults), or "" unless the HTTP option was given.
func (b *Broker) HTTPAddr() string { return b.httpAddr }

// DataDir returns the broker's data directory, inside t.TempDir().
func (b *Broker) DataDir() string { return b.dataDir }

// SchemaRegistryURL returns the schema registry's URL, http://127.0.0.1:PORT,
// or "" unless the SchemaRegistry option was given.
func (b *Broker) SchemaRegistryURL() string {
	if a := b.SchemaRegistryAddr(); a != nil {
		return "http://" + a.String()
	}
	return ""
}

// Opt configures Start.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

type seedTopic struct {
	name       string
	partitions int32
	configs    map[string]string
}

type cfg struct {
	props  map[string]string
	topics []seedTopic
	logger *slog.Logger
	http   bool
	now    func() time.Time
}

// Partitions sets num.partitions, the partition count of auto-created
// topics and of topics created without one.
func Partitions(n int32) Opt {
	return optFunc(func(c *cfg) { c.props["num.partitions"] = strconv.Itoa(int(n)) })
}

// AutoCreateTopics sets auto.create.topics.enable (default true, as in
// Kafka).
func AutoCreateTopics(enable bool) Opt {
	return optFunc(func(c *cfg) { c.props["auto.create.topics.enable"] = strconv.FormatBool(enable) })
}

// Topic creates a topic before Start returns, with the given partitions
// (<= 0: num.partitions) and topic configs by their Kafka names
// (retention.ms, max.message.bytes, …; nil for none).
func Topic(name string, partitions int32, configs map[string]string) Opt {
	return optFunc(func(c *cfg) {
		c.topics = append(c.topics, seedTopic{name, partitions, maps.Clone(configs)})
	})
}

// Prop sets a broker property by its Kafka name, e.g.
// Prop("log.retention.ms", "60000").
func Prop(name, value string) Opt {
	return optFunc(func(c *cfg) { c.props[name] = value })
}

// Logger sends the broker's logs to l; by default they are discarded.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *cfg) { c.logger = l }) }

// SchemaRegistry also serves Confluent Schema Registry's REST API on a
// random loopback port (see SchemaRegistryURL), its state in the topic
// _schemas.
func SchemaRegistry() Opt {
	return optFunc(func(c *cfg) { c.props["schema.registry.listeners"] = "http://127.0.0.1:0" })
}

// HTTP also starts the admin HTTP listener (/metrics, /healthz, /readyz,
// the console and /admin/faults) on a random loopback port; see HTTPAddr.
func HTTP() Opt { return optFunc(func(c *cfg) { c.http = true }) }

// Clock replaces the broker's clock (retention, timestamps, group timers).
func Clock(now func() time.Time) Opt { return optFunc(func(c *cfg) { c.now = now }) }

// Start starts a broker for the duration of the test: it fails the test
// (t.Fatal) if the broker cannot start, and closes it in t.Cleanup.
func Start(t testing.TB, opts ...Opt) *Broker {
	t.Helper()
	b, err := start(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("gregortest: %v", err)
	}
	t.Cleanup(func() {
		if err := b.stop(); err != nil {
			t.Errorf("gregortest: close: %v", err)
		}
	})
	return b
}

// New starts a broker outside a test, e.g. one shared by a package's tests
// from TestMain: its data is in a new temporary directory that Close
// removes.
func New(opts ...Opt) (*Broker, error) {
	dir, err := os.MkdirTemp("", "gregortest-")
	if err != nil {
		return nil, err
	}
	b, err := start(dir, opts...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b.ownDir = true
	return b, nil
}

// Close stops a broker made by New and removes its data. (Brokers from
// Start are closed by t.Cleanup; calling Close on them is a no-op
// returning nil.)
func (b *Broker) Close() error {
	if !b.ownDir {
		return nil
	}
	b.ownDir = false
	err := b.stop()
	return errors.Join(err, os.RemoveAll(b.dataDir))
}

// running holds what stop must shut down.
type running struct {
	served   chan error
	httpSrv  *http.Server
	httpDone chan error
}

func start(dir string, opts ...Opt) (*Broker, error) {
	c := &cfg{props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}
	for _, o := range opts {
		o.apply(c)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	bb, err := broker.New(broker.Config{Listen: "127.0.0.1:0", DataDir: dir, Props: c.props, Logger: c.logger, Now: c.now})
	if err != nil {
		return nil, err
	}
	addr, err := bb.Listen()
	if err != nil {
		bb.Close()
		return nil, err
	}
	for _, st := range c.topics {
		if err := bb.CreateTopic(st.name, st.partitions, st.configs); err != nil {
			bb.Close()
			return nil, fmt.Errorf("seed topic %s: %w", st.name, err)
		}
	}
	b := &Broker{Broker: bb, addr: addr.String(), dataDir: dir}
	rs := &running{served: make(chan error, 1)}
	go func() { rs.served <- bb.Serve() }()
	if c.http {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			bb.Close()
			<-rs.served
			return nil, err
		}
		as, err := admin.New(bb, admin.Options{Logger: c.logger})
		if err != nil {
			ln.Close()
			bb.Close()
			<-rs.served
			return nil, err
		}
		b.httpAddr = ln.Addr().String()
		rs.httpSrv = &http.Server{Handler: as, ReadHeaderTimeout: 10 * time.Second}
		rs.httpDone = make(chan error, 1)
		go func() { rs.httpDone <- rs.httpSrv.Serve(as.Listen(ln)) }()
	}
	b.run = rs
	return b, nil
}

// stop closes the HTTP listener and the broker and waits for both.
func (b *Broker) stop() error {
	var errs []error
	if b.run.httpSrv != nil {
		errs = append(errs, b.run.httpSrv.Close())
		if err := <-b.run.httpDone; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, b.Broker.Close())
	errs = append(errs, <-b.run.served)
	return errors.Join(errs...)
}
