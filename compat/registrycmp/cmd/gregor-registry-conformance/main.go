// Command gregor-registry-conformance runs the registry comparison
// (compat/registrycmp) against Apicurio Registry and Gregor's schema
// registry, both started here, and writes the report (make
// registry-conformance):
//
//	go run ./compat/registrycmp/cmd/gregor-registry-conformance -out docs/registry-conformance.md
//
// GREGOR_BIN names a gregor binary to use instead of building one. -run
// selects scenarios by a substring of their name; -v prints the processes'
// output and both sides of every differing scenario.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/compat/registrycmp"
)

func main() {
	out := flag.String("out", "docs/registry-conformance.md", "report file")
	run := flag.String("run", "", "only scenarios whose name contains this")
	verbose := flag.Bool("v", false, "print the registries' output and differing answers")
	flag.Parse()
	if err := registrycmp.Available(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mainErr(*out, *run, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func mainErr(out, run string, verbose bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var logs io.Writer = io.Discard
	if verbose {
		logs = os.Stderr
	}
	tmp, err := os.MkdirTemp("", "gregor-registrycmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := os.Getenv("GREGOR_BIN")
	if bin == "" {
		if bin, err = registrycmp.BuildGregor(ctx, tmp); err != nil {
			return err
		}
	}
	start := time.Now()
	jar, err := registrycmp.ApicurioJar(ctx, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Apicurio jar ready in %v: %s\n", time.Since(start).Round(time.Millisecond), jar)
	ap, err := registrycmp.StartApicurio(ctx, jar, logs)
	if err != nil {
		return err
	}
	defer ap.Stop()
	gr, err := registrycmp.StartGregor(ctx, bin, tmp+"/data", logs)
	if err != nil {
		return err
	}
	defer gr.Stop()
	fmt.Fprintf(os.Stderr, "Apicurio on %s (ready in %v), Gregor on %s (ready in %v)\n",
		ap.URL, ap.Ready.Round(time.Millisecond), gr.URL, gr.Ready.Round(time.Millisecond))
	var scenarios []registrycmp.Scenario
	for _, s := range registrycmp.All() {
		if strings.Contains(s.Name, run) {
			scenarios = append(scenarios, s)
		}
	}
	runStart := time.Now()
	outs := registrycmp.Run(ap.URL, gr.URL, scenarios, func(o registrycmp.Outcome) {
		mark := "same"
		if !o.Match {
			mark = "DIFFERS"
		}
		fmt.Fprintf(os.Stderr, "%-8s %s (%v)\n", mark, o.Name, o.Elapsed.Round(time.Millisecond))
		if !o.Match && verbose {
			fmt.Fprintf(os.Stderr, "  apicurio: %s\n  gregor:   %s\n", strings.Join(o.Apicurio, "\n            "), strings.Join(o.Gregor, "\n            "))
		}
	})
	var buf bytes.Buffer
	registrycmp.WriteReport(&buf, registrycmp.ReportInfo{Notes: registrycmp.Notes}, outs)
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	m, n := registrycmp.Summary(outs)
	fmt.Fprintf(os.Stderr, "%d of %d scenarios match; scenarios took %v; report in %s\n", m, n, time.Since(runStart).Round(time.Millisecond), out)
	return nil
}
