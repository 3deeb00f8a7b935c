package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
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
  reset-offsets GROUP (--to-earliest | --to-latest | --to-current |
                --to-datetime TIME | --by-duration D | --to-offset N |
                --shift-by N | --from-file CSV) [--topic T…] [--execute]
                                moves the committed offsets of an inactive group;
                                without --execute only prints the plan

Every command takes --brokers HOST:PORT[,…], --timeout and --command-config
FILE (Kafka client properties: security.protocol, sasl.*, ssl.*); list and
describe take --format json.`

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
		format := formatFlag(fs)
		if _, err := parseInterleaved(fs, args); err != nil {
			return err
		}
		if err := checkFormat(*format); err != nil {
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
		if *format == "json" {
			type groupJSON struct {
				Group        string `json:"group"`
				State        string `json:"state"`
				ProtocolType string `json:"protocol_type"`
			}
			out := []groupJSON{}
			for _, g := range lg.Sorted() {
				out = append(out, groupJSON{g.Group, g.State, g.ProtocolType})
			}
			return printJSON(out)
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
		format := formatFlag(fs)
		names, err := parseInterleaved(fs, args)
		if err != nil {
			return err
		}
		if err := checkFormat(*format); err != nil {
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
		type offsetJSON struct {
			Topic         string `json:"topic"`
			Partition     int32  `json:"partition"`
			CurrentOffset *int64 `json:"current_offset"` // null: not committed
			LogEndOffset  int64  `json:"log_end_offset"`
			Lag           *int64 `json:"lag"` // null: not committed
			ConsumerID    string `json:"consumer_id,omitempty"`
			Host          string `json:"host,omitempty"`
			ClientID      string `json:"client_id,omitempty"`
		}
		type groupJSON struct {
			Group        string       `json:"group"`
			State        string       `json:"state"`
			ProtocolType string       `json:"protocol_type"`
			Protocol     string       `json:"protocol"`
			Members      int          `json:"members"`
			TotalLag     int64        `json:"total_lag"`
			Offsets      []offsetJSON `json:"offsets"`
		}
		jsonOut := []groupJSON{}
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
			if *format == "json" {
				g := groupJSON{Group: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol, Members: len(l.Members), Offsets: []offsetJSON{}}
				for _, m := range l.Lag.Sorted() {
					o := offsetJSON{Topic: m.Topic, Partition: m.Partition, LogEndOffset: m.End.Offset}
					if m.Commit.At >= 0 {
						at, lag := m.Commit.At, max(m.Lag, 0)
						o.CurrentOffset, o.Lag = &at, &lag
						g.TotalLag += lag
					}
					if m.Member != nil {
						o.ConsumerID, o.Host, o.ClientID = m.Member.MemberID, m.Member.ClientHost, m.Member.ClientID
					}
					g.Offsets = append(g.Offsets, o)
				}
				jsonOut = append(jsonOut, g)
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
			// Lag as Kafka defines it (kafka-consumer-groups, the
			// console): the log end offset minus the committed offset,
			// for partitions the group committed; one it did not commit
			// has no lag ("-"), where kadm would count the whole log.
			var total int64
			for _, m := range l.Lag.Sorted() {
				if m.Commit.At >= 0 && m.Lag > 0 {
					total += m.Lag
				}
			}
			fmt.Printf("Group: %s\tState: %s\tProtocol: %s\tMembers: %d\tTotal lag: %d\n", l.Group, l.State, proto, len(l.Members), total)
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
			for _, m := range l.Lag.Sorted() {
				cur, lag := "-", "-"
				if m.Commit.At >= 0 {
					cur, lag = fmt.Sprint(m.Commit.At), fmt.Sprint(max(m.Lag, 0))
				}
				id, host, client := "-", "-", "-"
				if m.Member != nil {
					id, host, client = m.Member.MemberID, m.Member.ClientHost, m.Member.ClientID
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", m.Topic, m.Partition, cur, m.End.Offset, lag, id, host, client)
			}
			w.Flush()
		}
		if *format == "json" {
			if err := printJSON(jsonOut); err != nil {
				return err
			}
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
// table, committed only with --execute. As Kafka's tool, it refuses a
// group with members before printing anything, and keeps every new offset
// within the partition's log (start to end).
func resetOffsets(cf *clientFlags, args []string) error {
	fs := newFlagSet("groups reset-offsets", "GROUP (--to-earliest|--to-latest|--to-current|--to-datetime TIME|--by-duration D|--to-offset N|--shift-by N|--from-file F) [--topic T…] [--execute]",
		"Resets a group's committed offsets. TIME is RFC 3339 (2024-05-01T12:00:00Z) or milliseconds since the epoch; D is ISO 8601 (PT1H30M, P1DT2H) or Go's (90m); F holds topic,partition,offset lines.")
	cf.register(fs)
	earliest := fs.Bool("to-earliest", false, "reset to the log start offsets")
	latest := fs.Bool("to-latest", false, "reset to the log end offsets")
	current := fs.Bool("to-current", false, "reset to the committed offsets (partitions without one: the log end)")
	datetime := fs.String("to-datetime", "", "reset to the first offsets at or after this time")
	duration := fs.String("by-duration", "", "reset to the first offsets at or after this long ago")
	toOffset := fs.String("to-offset", "", "reset every partition to this offset")
	shiftBy := fs.String("shift-by", "", "move each committed offset by this many (negative: back)")
	fromFile := fs.String("from-file", "", "reset to the offsets of this CSV file (topic,partition,offset per line)")
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
	for _, b := range []bool{*earliest, *latest, *current, *datetime != "", *duration != "", *toOffset != "", *shiftBy != "", *fromFile != ""} {
		if b {
			n++
		}
	}
	if n != 1 {
		return errors.New("groups reset-offsets: give exactly one of --to-earliest, --to-latest, --to-current, --to-datetime, --by-duration, --to-offset, --shift-by, --from-file")
	}
	var millis, offset, shift int64
	var fileOffsets map[string]map[int32]int64
	switch {
	case *datetime != "":
		if millis, err = parseTime(*datetime); err != nil {
			return fmt.Errorf("--to-datetime: %w", err)
		}
	case *duration != "":
		d, err := parseDuration(*duration)
		if err != nil {
			return fmt.Errorf("--by-duration: %w", err)
		}
		millis = time.Now().Add(-d).UnixMilli()
	case *toOffset != "":
		if offset, err = strconv.ParseInt(*toOffset, 10, 64); err != nil || offset < 0 {
			return fmt.Errorf("--to-offset: %q is not an offset", *toOffset)
		}
	case *shiftBy != "":
		if shift, err = strconv.ParseInt(*shiftBy, 10, 64); err != nil {
			return fmt.Errorf("--shift-by: %q is not a number", *shiftBy)
		}
	case *fromFile != "":
		if fileOffsets, err = readOffsetsFile(*fromFile); err != nil {
			return fmt.Errorf("--from-file: %w", err)
		}
		if len(topics) == 0 {
			for t := range fileOffsets {
				topics = append(topics, t)
			}
			slices.Sort(topics)
		}
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()

	// As kafka-consumer-groups: only an inactive group, checked first.
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	if g, ok := described[group]; ok && g.Err == nil && g.State != "Empty" && g.State != "Dead" && g.State != "" {
		return fmt.Errorf("assignments can only be reset if the group '%s' is inactive, but the current state is %s", group, g.State)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	if err := committed.Error(); err != nil {
		return err
	}
	if len(topics) == 0 {
		for t := range committed.Offsets() {
			topics = append(topics, t)
		}
		slices.Sort(topics)
		if len(topics) == 0 {
			return fmt.Errorf("group %s has no committed offsets: name topics with --topic", group)
		}
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return err
	}
	var byTime kadm.ListedOffsets
	if *datetime != "" || *duration != "" {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, millis, topics...); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return err
		}
	}
	type planned struct {
		topic     string
		partition int32
		offset    int64
	}
	var plan []planned
	var errs []error
	ends.Each(func(end kadm.ListedOffset) {
		start, _ := starts.Lookup(end.Topic, end.Partition)
		c, hasCommit := committed.Lookup(end.Topic, end.Partition)
		var at int64
		switch {
		case *earliest:
			at = start.Offset
		case *latest:
			at = end.Offset
		case *current:
			at = end.Offset
			if hasCommit {
				at = c.At
			}
		case *datetime != "" || *duration != "":
			o, _ := byTime.Lookup(end.Topic, end.Partition)
			at = o.Offset
		case *toOffset != "":
			at = offset
		case *shiftBy != "":
			if !hasCommit {
				errs = append(errs, fmt.Errorf("%s-%d has no committed offset to shift", end.Topic, end.Partition))
				return
			}
			at = c.At + shift
		case *fromFile != "":
			o, ok := fileOffsets[end.Topic][end.Partition]
			if !ok {
				return // not in the file: left as it is
			}
			at = o
		}
		// Kafka's tool moves an offset outside the log to its nearest end.
		at = min(max(at, start.Offset), end.Offset)
		plan = append(plan, planned{end.Topic, end.Partition, at})
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	slices.SortFunc(plan, func(a, b planned) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition) - int(b.partition)
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tNEW-OFFSET")
	for _, o := range plan {
		fmt.Fprintf(w, "%s\t%d\t%d\n", o.topic, o.partition, o.offset)
	}
	w.Flush()
	if !*execute {
		fmt.Fprintln(os.Stderr, "dry run: add --execute to commit these offsets")
		return nil
	}
	// Commit in chunks so that progress can be shown for many partitions.
	prog := newProgress()
	total, reset := len(plan), 0
	const chunk = 500
	for i := 0; i < total; i += chunk {
		var part kadm.Offsets
		for _, o := range plan[i:min(i+chunk, total)] {
			part.Add(kadm.Offset{Topic: o.topic, Partition: o.partition, At: o.offset, LeaderEpoch: -1})
		}
		resps, err := adm.CommitOffsets(ctx, group, part)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("commit (is the group still active?): %w", err)
		}
		reset += len(plan[i:min(i+chunk, total)])
		prog.update("reset %d/%d partitions", reset, total)
	}
	prog.done("reset %d/%d partitions", reset, total)
	fmt.Fprintf(os.Stderr, "committed new offsets for %s of group %s\n", plural(total, "partition"), group)
	return nil
}

// readOffsetsFile reads kafka-consumer-groups' --from-file CSV: one
// topic,partition,offset per line (blank lines skipped).
func readOffsetsFile(path string) (map[string]map[int32]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want topic,partition,offset: %q", i+1, line)
		}
		p, err1 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 32)
		o, err2 := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("line %d: want topic,partition,offset: %q", i+1, line)
		}
		t := strings.TrimSpace(f[0])
		if out[t] == nil {
			out[t] = map[int32]int64{}
		}
		out[t][int32(p)] = o
	}
	return out, nil
}

// isoDuration is ISO 8601's PnDTnHnMnS (what --by-duration takes in
// Kafka's tool; seconds may have a fraction).
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseDuration reads an ISO 8601 duration (PT1H30M, P1DT2H) or Go's
// (90m, 1h30m).
func parseDuration(s string) (time.Duration, error) {
	if m := isoDuration.FindStringSubmatch(strings.ToUpper(s)); m != nil && s != "P" && !strings.HasSuffix(strings.ToUpper(s), "T") {
		var d time.Duration
		for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
			if m[i+1] != "" {
				n, _ := strconv.ParseInt(m[i+1], 10, 64)
				d += time.Duration(n) * unit
			}
		}
		if m[4] != "" {
			sec, _ := strconv.ParseFloat(m[4], 64)
			d += time.Duration(sec * float64(time.Second))
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("cannot parse %q: want ISO 8601 (PT1H) or Go's (1h)", s)
	}
	return d, nil
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
