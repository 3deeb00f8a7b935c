package main

// gregor users add NAME --password PW [--mechanism SCRAM-SHA-256] [--iterations 4096] --data-dir DIR
// gregor users delete NAME --data-dir DIR
//
// Manage the SASL users of a data directory offline, before the broker
// starts (as kafka-storage format --add-scram does): the SCRAM credential
// (salt, iterations, StoredKey, ServerKey) is written to
// DIR/__meta/users.json, never the password. A running broker's users are
// managed with AlterUserScramCredentials (kafka-configs --alter
// --add-config 'SCRAM-SHA-256=[password=…]' --entity-type users).

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/gregor-broker/gregor/broker"
)

func usersCmd(args []string) error {
	usage := func() error {
		fmt.Fprintln(os.Stderr, "usage: gregor users add NAME --password PW [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N] --data-dir DIR\n       gregor users delete NAME --data-dir DIR")
		return errUsage
	}
	if len(args) > 0 && isHelp(args[0]) {
		usage()
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return usage()
	}
	sub := args[0]
	fs := flag.NewFlagSet("gregor users "+sub, flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./data", "data directory of the broker")
	password := fs.String("password", "", "the user's password")
	mechanism := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	iterations := fs.Int("iterations", 4096, "SCRAM iterations (4096-16384)")
	rest := args[1:]
	var name string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if name == "" {
		return usage()
	}
	switch sub {
	case "add":
		if *password == "" {
			return errors.New("--password is required")
		}
		if err := broker.AddUser(*dataDir, name, strings.ToUpper(*mechanism), *password, *iterations); err != nil {
			return err
		}
		fmt.Printf("added %s credential for user %s\n", strings.ToUpper(*mechanism), name)
	case "delete":
		if err := broker.DeleteUser(*dataDir, name); err != nil {
			return err
		}
		fmt.Printf("deleted user %s\n", name)
	default:
		return usage()
	}
	return nil
}
