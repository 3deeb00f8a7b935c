package main

// Client subcommands: they talk to any Kafka-compatible broker over the
// protocol (franz-go's kgo and kadm), so they work against Kafka too.
//
//	gregor topics list|create|describe|delete|alter-config [flags]
//	gregor groups list|describe|delete|reset-offsets [flags]
//	gregor produce TOPIC [flags] < lines
//	gregor consume TOPIC [flags]
//	gregor healthcheck [--http ADDR]
//	gregor users add|delete NAME … --data-dir DIR   (offline, see users.go)
//
// Each takes --brokers HOST:PORT[,…] (default $GREGOR_BROKERS or
// 127.0.0.1:9092) and --timeout.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/clientconfig"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// subcommands are the commands beside serve; each gets the arguments after
// its name.
var subcommands = map[string]func(args []string) error{
	"topics":      topicsCmd,
	"groups":      groupsCmd,
	"produce":     produceCmd,
	"consume":     consumeCmd,
	"healthcheck": healthcheckCmd,
	"users":       usersCmd,
	"link":        linkCmd,
}

// errUsage is returned after a usage message was printed.
var errUsage = errors.New("usage")

// clientFlags are the flags every client command has.
type clientFlags struct {
	brokers       string
	timeout       time.Duration
	commandConfig string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	def := os.Getenv("GREGOR_BROKERS")
	if def == "" {
		def = "127.0.0.1:9092"
	}
	fs.StringVar(&c.brokers, "brokers", def, "bootstrap brokers, host:port[,host:port…]")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "overall timeout of the command (0: none)")
	fs.StringVar(&c.commandConfig, "command-config", os.Getenv("GREGOR_COMMAND_CONFIG"),
		"Kafka client properties file, as kafka-*.sh take it: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*")
}

func (c *clientFlags) client(opts ...kgo.Opt) (*kgo.Client, error) {
	var seeds []string
	for _, s := range strings.Split(c.brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("--brokers is empty")
	}
	base := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("gregor-cli")}
	if c.commandConfig != "" {
		props, err := readProperties(c.commandConfig)
		if err != nil {
			return nil, err
		}
		sec, err := clientconfig.Options(props)
		if err != nil {
			return nil, fmt.Errorf("--command-config %s: %w", c.commandConfig, err)
		}
		base = append(base, sec...)
	}
	return kgo.NewClient(append(base, opts...)...)
}

// readProperties reads a Java properties file (--command-config,
// --source-config).
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props := map[string]string{}
	if err := broker.ParseProperties(f, props); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

func (c *clientFlags) admin() (*kadm.Client, *kgo.Client, error) {
	cl, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// adminContext is how most admin subcommands start: an admin client and a
// context bounded by --timeout; done releases both.
func (c *clientFlags) adminContext() (*kadm.Client, context.Context, func(), error) {
	adm, cl, err := c.admin()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := c.context()
	return adm, ctx, func() { cancel(); cl.Close() }, nil
}

func (c *clientFlags) context() (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), c.timeout)
}

// newFlagSet makes a flag set whose usage names the command and its
// arguments.
func newFlagSet(name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: gregor %s %s\n%s\n", name, args, about)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterleaved parses flags that may come after positional arguments
// (gregor topics create orders --partitions 3), returning the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// isTerminal reports whether f is a character device (a terminal), for
// deciding whether to show progress.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress prints a self-overwriting status line on stderr when it is a
// terminal, at most every 200ms; done ends the line.
type progress struct {
	on   bool
	last time.Time
	w    io.Writer
}

func newProgress() *progress { return &progress{on: isTerminal(os.Stderr), w: os.Stderr} }

func (p *progress) update(format string, args ...any) {
	if !p.on || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
}

func (p *progress) done(format string, args ...any) {
	if !p.on {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K"+format+"\n", args...)
}

// formatFlag registers --format on a list or describe command: "text"
// (the default, tables for a person) or "json" (one JSON document on
// standard output, for a program).
func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "text", "output: text or json")
}

// checkFormat refuses a --format other than text or json.
func checkFormat(f string) error {
	if f != "text" && f != "json" {
		return fmt.Errorf("--format %q: want text or json", f)
	}
	return nil
}

// printJSON writes v as indented JSON to standard output.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
