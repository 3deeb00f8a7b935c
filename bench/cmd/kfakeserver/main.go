// Command kfakeserver runs franz-go's in-memory fake cluster (kfake) as its
// own process, so the benchmark can measure it exactly as it measures the
// gregor binary.
//
//	kfakeserver [--listen 127.0.0.1:0] [--partitions 1] [--seed-topics a,b]
//
// It runs one broker on the loopback address, creates topics automatically
// with --partitions partitions (Gregor's num.partitions default is 1), logs
// a slog text line with msg=listening addr=HOST:PORT on stderr once it
// accepts connections, and stops on SIGINT or SIGTERM. Everything it is sent
// stays in memory.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	start := time.Now()
	fs := flag.NewFlagSet("kfakeserver", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on (port 0 picks a free port)")
	partitions := fs.Int("partitions", 1, "partitions of an automatically created topic")
	seed := fs.String("seed-topics", "", "comma-separated topics to create at start")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, portStr, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if host != "127.0.0.1" {
		// kfake always binds 127.0.0.1; refuse to pretend otherwise.
		return fmt.Errorf("--listen: kfake binds only 127.0.0.1, not %q", host)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
	}
	if *seed != "" {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), strings.Split(*seed, ",")...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		return fmt.Errorf("want one listen address, have %v", addrs)
	}
	log.Info("listening", "addr", addrs[0], "startup", time.Since(start))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.Info("shutting down", "signal", s.String())
	c.Close()
	log.Info("stopped")
	return nil
}
