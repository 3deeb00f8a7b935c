// Command gregor runs a Kafka-compatible broker.
//
//	gregor [serve] [--listen ADDR] [--advertise HOST:PORT] [--data-dir DIR]
//	       [--config FILE] [--set key=value ...] [--log-level LEVEL]
//	       [--http ADDR]
//	gregor topics|groups|produce|consume|users|healthcheck …   (see cli.go)
//	gregor help | version
//
// --advertise and --http default to $GREGOR_ADVERTISE and $GREGOR_HTTP.
// --http starts the admin listener: /metrics, /healthz, /readyz, the web
// console and fault injection (package admin).
//
// With no arguments it serves on 127.0.0.1:9092 with data in ./data.
// --listen is the shorthand for one PLAINTEXT listener; Kafka's listeners,
// advertised.listeners, listener.security.protocol.map and the ssl.* and
// sasl.* properties (--set or --config) configure TLS and SASL listeners,
// which are logged one by one (msg=listener name=… addr=…); the first is
// the addr of the listening line. `gregor users add` creates SASL users
// before the first start.
// Properties use Kafka's names (num.partitions, log.retention.ms, …); --set
// overrides --config. SIGINT or SIGTERM shuts down gracefully: in a
// cluster the leadership of the broker's partitions moves to in-sync
// followers first (controlled shutdown; a second signal skips the rest of
// it), then connections are closed, every partition is flushed and marked
// clean.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/cluster"
	"github.com/gregor-broker/gregor/metadata"
)

// mainStart is when main began: the startup= of the listening line counts
// from it, and a debug line (msg=main unix_ns=…) gives it to start-time
// measurements (bench/cmd/start-bench) to split exec→main from main→listening.
var mainStart time.Time

func main() {
	mainStart = time.Now()
	args := os.Args[1:]
	switch {
	case len(args) > 0 && isHelp(args[0]):
		printUsage(os.Stdout)
		return
	case len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version"):
		versionCmd(nil)
		return
	case len(args) > 0 && subcommands[args[0]] != nil:
		if err := subcommands[args[0]](args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return // help asked for and printed
			}
			if !errors.Is(err, errUsage) {
				fmt.Fprintln(os.Stderr, "gregor:", err)
			}
			os.Exit(1)
		}
		return
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	if err := serve(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}

// serveOpts are serve's flags.
type serveOpts struct {
	listen, advertise, httpAddr, dataDir, configFile, logLevel *string
	sets                                                       setFlags
}

// serveFlags is serve's flag set, its usage the top-level one.
func serveFlags() (*flag.FlagSet, *serveOpts) {
	fs := flag.NewFlagSet("gregor", flag.ContinueOnError)
	o := &serveOpts{sets: setFlags{}}
	o.listen = fs.String("listen", "127.0.0.1:9092", "address to listen on (port 0 picks a free port)")
	o.advertise = fs.String("advertise", os.Getenv("GREGOR_ADVERTISE"), "host:port advertised to clients (default: $GREGOR_ADVERTISE, else the bound address)")
	o.httpAddr = fs.String("http", os.Getenv("GREGOR_HTTP"), "admin HTTP listener (metrics, health, console), e.g. 127.0.0.1:9644; off when empty")
	o.dataDir = fs.String("data-dir", "", "data directory (default: log.dirs or log.dir of --config or --set, else ./data)")
	o.configFile = fs.String("config", "", "Kafka-style properties file")
	o.logLevel = fs.String("log-level", "info", "debug, info, warn or error")
	fs.Var(o.sets, "set", "a single property, key=value (repeatable)")
	return fs, o
}

type setFlags map[string]string

func (s setFlags) String() string { return fmt.Sprint(map[string]string(s)) }

func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return errors.New("want key=value")
	}
	s[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

func serve(args []string) error {
	start := mainStart
	if start.IsZero() {
		start = time.Now()
	}
	fs, o := serveFlags()
	fs.Usage = func() { printUsage(fs.Output()) }
	listen, advertise, httpAddr, dataDir, configFile, logLevel, sets := o.listen, o.advertise, o.httpAddr, o.dataDir, o.configFile, o.logLevel, o.sets
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	log.Debug("main", "unix_ns", start.UnixNano())

	props := map[string]string{}
	if *configFile != "" {
		f, err := os.Open(*configFile)
		if err != nil {
			return err
		}
		err = broker.ParseProperties(f, props)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *configFile, err)
		}
	}
	for k, v := range sets {
		props[k] = v
	}
	if id := strings.TrimSpace(props["node.id"]); id != "" && strings.TrimSpace(props["controller.quorum.voters"]) != "" {
		// A cluster's nodes often log to one terminal (make cluster):
		// every line says whose it is.
		log = log.With("node", id)
		slog.SetDefault(log)
	}
	b, err := broker.New(broker.Config{Listen: *listen, Advertise: *advertise, DataDir: *dataDir, Props: props, Logger: log, JoinCluster: joinCluster, Version: versionLabel()})
	if err != nil {
		return err
	}
	addr, err := b.Listen()
	if err != nil {
		b.Close()
		return err
	}
	stopHTTP, err := startHTTP(*httpAddr, b, log)
	if err != nil {
		b.Close()
		return err
	}
	defer stopHTTP()
	if names := b.Listeners(); len(names) > 1 {
		for _, n := range names {
			log.Info("listener", "name", n, "addr", b.ListenerAddr(n).String())
		}
	}
	if a := b.SchemaRegistryAddr(); a != nil {
		log.Info("schema registry", "url", "http://"+a.String())
	}
	log.Info("listening", "addr", addr.String(), "data_dir", b.DataDir(), "cluster_id", b.ClusterID(), "startup", time.Since(start))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- b.Serve() }()
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
		// In a cluster, first hand the leadership of this broker's
		// partitions to in-sync followers (a second signal stops at once).
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-sig:
				cancel()
			case <-ctx.Done():
			}
		}()
		b.ControlledShutdown(ctx)
		cancel()
	case err := <-done:
		if err != nil {
			log.Error("serve", "err", err)
		}
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// joinCluster is the cluster's metadata store: etcd, embedded or external
// (package cluster).
func joinCluster(ctx context.Context, cfg metadata.JoinConfig) (broker.Cluster, error) {
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, err // not a nil *cluster.Node in a non-nil interface
	}
	return n, nil
}
