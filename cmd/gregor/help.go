package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// topUsage is what gregor help prints above the serve flags.
const topUsage = `usage: gregor [serve] [flags]     run a broker (the flags below)
       gregor COMMAND [args]      talk to a broker, or to a data directory

Commands:
  serve        run a broker (the default)
  topics       list, create, describe, delete topics and alter their configs
  groups       list, describe, delete consumer groups and reset their offsets
  produce      produce records from arguments or standard input
  consume      consume records, optionally in a group
  users        add or delete SASL/SCRAM users of a data directory
  link         mirror another Kafka cluster's topics here at the same offsets
  healthcheck  exit 0 when a broker answers
  completion   print a bash or zsh completion script
  version      print the version
  help         print this

Run 'gregor COMMAND --help' for a command's arguments.

Serve flags:`

// isHelp tells whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// printUsage prints the top-level usage and the serve flags to w.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, topUsage)
	fs, _ := serveFlags()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// buildVersion is the version the Makefile stamps into the binaries it
// builds (make build, cross, dist: -ldflags "-X main.buildVersion=...",
// git describe); empty in a plain go build.
var buildVersion string

// version is the binary's version: buildVersion when stamped, else the
// module version it was built as (a tag, a pseudo-version or "(devel)"),
// with the VCS revision and time when known, and the Go version and
// platform.
func version() string {
	v, rev, at, dirty := "(devel)", "", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+modified"
				}
			}
		}
	}
	if buildVersion != "" {
		v = buildVersion
	}
	out := "gregor " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " (" + rev + dirty
		if at != "" {
			out += ", " + at
		}
		out += ")"
	}
	return out + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

func versionCmd([]string) error {
	fmt.Fprintln(os.Stdout, version())
	return nil
}

// versionLabel is the version gregor_build_info reports: buildVersion when
// stamped, else "" (the broker takes the module version from the build
// info).
func versionLabel() string { return buildVersion }
