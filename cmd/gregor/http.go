package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/broker"
)

// startHTTP starts the admin listener (metrics, probes, console, faults) on
// addr; "" starts nothing. The returned function shuts it down.
func startHTTP(addr string, b *broker.Broker, log *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	as, err := admin.New(b, admin.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	srv := &http.Server{Handler: as, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(as.Listen(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin http", "err", err)
		}
	}()
	log.Info("admin http listening", "addr", ln.Addr().String(), "tls", as.TLSConfig() != nil)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// healthcheckCmd is "gregor healthcheck": exit 0 when the broker's
// /readyz answers 200, for container healthchecks in images without a
// shell or curl.
func healthcheckCmd(args []string) error {
	fs := newFlagSet("healthcheck", "[--http ADDR] [--path /readyz]", "Exits 0 when the admin listener answers 200.")
	def := os.Getenv("GREGOR_HTTP")
	if def == "" {
		def = "127.0.0.1:9644"
	}
	addr := fs.String("http", def, "admin listener address (default $GREGOR_HTTP or 127.0.0.1:9644)")
	path := fs.String("path", "/readyz", "path to check")
	timeout := fs.Duration("timeout", 3*time.Second, "timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	cl := &http.Client{Timeout: *timeout}
	resp, err := cl.Get("http://" + net.JoinHostPort(host, port) + *path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", *path, resp.Status, body)
	}
	fmt.Printf("%s", body)
	return nil
}
