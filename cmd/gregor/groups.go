package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

const groupsUsage = `usage: gregor groups COMMAND [flags]

  list                          groups with their state and protocol
  describe GROUP…               members, and per partition the committed
                                offset, log end offset and lag
  delete GROUP…
  reset-offsets GROUP (--to-earliest | --to-latest | --to-datetime TIME)
                [--topic T…] [--execute]
                                moves the committed offsets of an inactive group;
                                without --execute only prints the plan

Every command takes --brokers HOST:PORT[,…] and --timeout.`

func groupsCmd(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(os.Stdout, groupsUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, groupsUsage)
		return errUsage
	}
	var cf clientFlags
	sub, args := args[0], args[1:]
	switch sub {
	case "list":
		fs := newFlagSet("groups list", "", "Lists consumer groups.")
		cf.register(fs)
		if _, err := parseInterleaved(fs, args); err != nil {
			return err
		}
		adm, ctx, done, err := cf.adminContext()
		if err != nil {
			return err
		}
		defer done()
		lg, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "GROUP\tSTATE\tPROTOCOL-TYPE")
		for _, g := range lg.Sorted() {
			fmt.Fprintf(w, "%s\t%s\t%s\n", g.Group, g.State, g.ProtocolType)
		}
		return w.Flush()

	case "describe":
		fs := newFlagSet("groups describe", "GROUP…", "Describes groups with their lag.")
		cf.register(fs)
		names, err := parseInterleaved(fs, args)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return errors.New("groups describe: name at least one group")
		}
		adm, ctx, done, err := cf.adminContext()
		if err != nil {
			return err
		}
		defer done()
		lags, err := adm.Lag(ctx, names...)
		if err != nil {
			return err
		}
		var errs []error
		for i, name := range names {
			l, ok := lags[name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: not described", name))
				continue
			}
			if err := l.Error(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			if i > 0 {
				fmt.Println()
			}
			proto := l.ProtocolType + "/" + l.Protocol
			switch {
			case l.ProtocolType == "" && l.Protocol == "":
				proto = "-"
			case l.Protocol == "":
				proto = l.ProtocolType
			}
			fmt.Printf("Group: %s\tState: %s\tProtocol: %s\tMembers: %d\tTotal lag: %d\n", l.Group, l.State, proto, len(l.Members), l.Lag.Total())
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
			for _, m := range l.Lag.Sorted() {
				cur := "-"
				if m.Commit.At >= 0 {
					cur = fmt.Sprint(m.Commit.At)
				}
				id, host, client := "-", "-", "-"
				if m.Member != nil {
					id, host, client = m.Member.MemberID, m.Member.ClientHost, m.Member.ClientID
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", m.Topic, m.Partition, cur, m.End.Offset, m.Lag, id, host, client)
			}
			w.Flush()
		}
		return errors.Join(errs...)

	case "delete":
		fs := newFlagSet("groups delete", "GROUP…", "Deletes inactive groups and their offsets.")
		cf.register(fs)
		names, err := parseInterleaved(fs, args)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return errors.New("groups delete: name at least one group")
		}
		adm, ctx, done, err := cf.adminContext()
		if err != nil {
			return err
		}
		defer done()
		resps, err := adm.DeleteGroups(ctx, names...)
		if err != nil {
			return err
		}
		var errs []error
		for _, r := range resps.Sorted() {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Group, r.Err))
				continue
			}
			fmt.Printf("deleted group %s\n", r.Group)
		}
		return errors.Join(errs...)

	case "reset-offsets":
		return resetOffsets(&cf, args)
	}
	fmt.Fprintln(os.Stderr, groupsUsage)
	return fmt.Errorf("groups: unknown command %q", sub)
}

// resetOffsets is "groups reset-offsets", after kafka-consumer-groups.sh
// --reset-offsets: a plan (the new offset of every partition) printed as a
// table, committed only with --execute.
func resetOffsets(cf *clientFlags, args []string) error {
	fs := newFlagSet("groups reset-offsets", "GROUP (--to-earliest|--to-latest|--to-datetime TIME) [--topic T…] [--execute]",
		"Resets a group's committed offsets. TIME is RFC 3339 (2024-05-01T12:00:00Z) or milliseconds since the epoch.")
	cf.register(fs)
	earliest := fs.Bool("to-earliest", false, "reset to the log start offsets")
	latest := fs.Bool("to-latest", false, "reset to the log end offsets")
	datetime := fs.String("to-datetime", "", "reset to the first offsets at or after this time")
	execute := fs.Bool("execute", false, "commit the new offsets (default: only print the plan)")
	var topics multiFlag
	fs.Var(&topics, "topic", "topic to reset (repeatable; default: every topic the group has committed)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("groups reset-offsets: name exactly one group")
	}
	group := pos[0]
	n := 0
	for _, b := range []bool{*earliest, *latest, *datetime != ""} {
		if b {
			n++
		}
	}
	if n != 1 {
		return errors.New("groups reset-offsets: give exactly one of --to-earliest, --to-latest, --to-datetime")
	}
	var millis int64
	if *datetime != "" {
		if millis, err = parseTime(*datetime); err != nil {
			return fmt.Errorf("--to-datetime: %w", err)
		}
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()

	if len(topics) == 0 {
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		if err := committed.Error(); err != nil {
			return err
		}
		for t := range committed.Offsets() {
			topics = append(topics, t)
		}
		slices.Sort(topics)
		if len(topics) == 0 {
			return fmt.Errorf("group %s has no committed offsets: name topics with --topic", group)
		}
	}
	var listed kadm.ListedOffsets
	switch {
	case *earliest:
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case *latest:
		listed, err = adm.ListEndOffsets(ctx, topics...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(ctx, millis, topics...)
	}
	if err != nil {
		return err
	}
	if err := listed.Error(); err != nil {
		return err
	}
	var sorted []kadm.ListedOffset
	listed.Each(func(o kadm.ListedOffset) { sorted = append(sorted, o) })
	slices.SortFunc(sorted, func(a, b kadm.ListedOffset) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tNEW-OFFSET")
	for _, o := range sorted {
		fmt.Fprintf(w, "%s\t%d\t%d\n", o.Topic, o.Partition, o.Offset)
	}
	w.Flush()
	if !*execute {
		fmt.Fprintln(os.Stderr, "dry run: add --execute to commit these offsets")
		return nil
	}
	// Commit in chunks so that progress can be shown for many partitions.
	prog := newProgress()
	total, committed := len(sorted), 0
	const chunk = 500
	for i := 0; i < total; i += chunk {
		var part kadm.Offsets
		for _, o := range sorted[i:min(i+chunk, total)] {
			part.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		}
		resps, err := adm.CommitOffsets(ctx, group, part)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("commit (is the group still active?): %w", err)
		}
		committed += len(sorted[i:min(i+chunk, total)])
		prog.update("reset %d/%d partitions", committed, total)
	}
	prog.done("reset %d/%d partitions", committed, total)
	fmt.Fprintf(os.Stderr, "committed new offsets for %s of group %s\n", plural(total, "partition"), group)
	return nil
}

// parseTime reads RFC 3339 (with or without seconds' fraction, or a bare
// date-time taken as UTC) or milliseconds since the epoch.
func parseTime(s string) (int64, error) {
	var ms int64
	if _, err := fmt.Sscanf(s, "%d", &ms); err == nil && fmt.Sprint(ms) == s {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("cannot parse %q: want RFC 3339 or milliseconds", s)
}
