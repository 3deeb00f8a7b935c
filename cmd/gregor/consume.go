package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const formatHelp = `output format: %t topic, %p partition, %o offset, %k key, %v value,
%T timestamp (ms), %h headers (k=v,…), %K/%V key/value as hex, %% a percent sign;
\n \t escapes`

// consumeCmd is "gregor consume TOPIC".
func consumeCmd(args []string) error {
	var cf clientFlags
	fs := newFlagSet("consume", "TOPIC [flags]",
		"Prints records to standard output. Without --from-beginning, --offset or --timestamp it starts at the end.")
	cf.register(fs)
	fromBeginning := fs.Bool("from-beginning", false, "start at each partition's log start")
	offset := fs.Int64("offset", -1, "start at this offset (with --partition: of that partition; else of every partition)")
	timestamp := fs.String("timestamp", "", "start at the first record at or after this time (RFC 3339 or ms)")
	partition := fs.Int("partition", -1, "consume only this partition")
	count := fs.Int("n", 0, "stop after COUNT records (0: no limit)")
	untilEnd := fs.Bool("until-end", false, "stop at the log end offsets seen when starting")
	format := fs.String("format", "%v\\n", formatHelp)
	group := fs.String("group", "", "consume as this consumer group (commits offsets) instead of reading partitions directly")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("consume: name exactly one topic")
	}
	topic := pos[0]
	if cf.timeout == 30e9 {
		cf.timeout = 0 // consumers run until stopped, by default
	}
	start, from := kgo.NewOffset().AtEnd(), startPoint{kind: startEnd}
	switch {
	case *fromBeginning:
		start, from = kgo.NewOffset().AtStart(), startPoint{kind: startBeginning}
	case *offset >= 0:
		start, from = kgo.NewOffset().At(*offset), startPoint{kind: startOffset, at: *offset}
	case *timestamp != "":
		ms, err := parseTime(*timestamp)
		if err != nil {
			return fmt.Errorf("--timestamp: %w", err)
		}
		start, from = kgo.NewOffset().AfterMilli(ms), startPoint{kind: startTime, at: ms}
	}
	ctx, cancel := cf.context()
	defer cancel()

	adm, acl, err := cf.admin()
	if err != nil {
		return err
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		acl.Close()
		return err
	}
	t, ok := td[topic]
	if !ok || t.Err != nil {
		acl.Close()
		return fmt.Errorf("topic %s: %v", topic, t.Err)
	}
	var parts []int32
	for p := range t.Partitions {
		if *partition < 0 || p == int32(*partition) {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		acl.Close()
		return fmt.Errorf("topic %s has no partition %d", topic, *partition)
	}
	// With --until-end, the end offsets now are where reading stops.
	ends := map[int32]int64{}
	if *untilEnd {
		le, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			acl.Close()
			return err
		}
		le.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	}
	acl.Close()

	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond)}
	if *group != "" {
		// Offsets are committed once, at the end, for the records printed
		// (as kcat does): not those fetched beyond -n.
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start), kgo.DisableAutoCommit())
	} else {
		m := map[int32]kgo.Offset{}
		for _, p := range parts {
			m[p] = start
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: m}))
	}
	cl, err := cf.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// Partitions still to finish with --until-end: known once their start
	// is known; an empty one is done when it reports its position.
	pending := map[int32]bool{}
	if *untilEnd {
		for _, p := range parts {
			pending[p] = true
		}
		if err := dropFinished(ctx, cf, topic, from, parts, ends, pending); err != nil {
			return err
		}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmtParts := compileFormat(*format)
	prog := newProgress()
	n := 0
	printed := map[int32]*kgo.Record{} // the last record printed per partition
	for !*untilEnd || len(pending) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("%s-%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		stop := false
		fetches.EachRecord(func(r *kgo.Record) {
			if stop || *untilEnd && !pending[r.Partition] {
				return
			}
			writeRecord(out, fmtParts, r)
			printed[r.Partition] = r
			n++
			if *untilEnd && r.Offset+1 >= ends[r.Partition] {
				delete(pending, r.Partition)
			}
			if *count > 0 && n >= *count {
				stop = true
			}
		})
		out.Flush()
		prog.update("consumed %d records", n)
		if stop {
			break
		}
	}
	prog.done("consumed %d records", n)
	if *group != "" && len(printed) > 0 {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		recs := make([]*kgo.Record, 0, len(printed))
		for _, r := range printed {
			recs = append(recs, r)
		}
		return cl.CommitRecords(cctx, recs...)
	}
	return nil
}

// startPoint is where consume starts, for --until-end's bookkeeping.
type startPoint struct {
	kind int
	at   int64 // offset or millisecond
}

const (
	startEnd = iota
	startBeginning
	startOffset
	startTime
)

// dropFinished removes from pending the partitions whose start position is
// already at or past their end offset, so --until-end does not wait for
// records that will not come.
func dropFinished(ctx context.Context, cf clientFlags, topic string, from startPoint, parts []int32, ends map[int32]int64, pending map[int32]bool) error {
	var starts kadm.ListedOffsets
	switch from.kind {
	case startEnd:
		clear(pending)
		return nil
	case startOffset:
		for _, p := range parts {
			if from.at >= ends[p] {
				delete(pending, p)
			}
		}
		return nil
	}
	adm, cl, err := cf.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	if from.kind == startBeginning {
		starts, err = adm.ListStartOffsets(ctx, topic)
	} else {
		starts, err = adm.ListOffsetsAfterMilli(ctx, from.at, topic)
	}
	if err != nil {
		return err
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset < 0 || o.Offset >= ends[o.Partition] {
			delete(pending, o.Partition)
		}
	})
	return nil
}

// formatPart is a literal or a %-directive of --format.
type formatPart struct {
	lit string
	dir byte
}

func compileFormat(f string) []formatPart {
	f = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r").Replace(f)
	var parts []formatPart
	var lit strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			lit.WriteByte(f[i])
			continue
		}
		i++
		if f[i] == '%' {
			lit.WriteByte('%')
			continue
		}
		if lit.Len() > 0 {
			parts = append(parts, formatPart{lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, formatPart{dir: f[i]})
	}
	if lit.Len() > 0 {
		parts = append(parts, formatPart{lit: lit.String()})
	}
	return parts
}

func writeRecord(w io.Writer, parts []formatPart, r *kgo.Record) {
	for _, p := range parts {
		switch p.dir {
		case 0:
			io.WriteString(w, p.lit)
		case 't':
			io.WriteString(w, r.Topic)
		case 'p':
			fmt.Fprint(w, r.Partition)
		case 'o':
			fmt.Fprint(w, r.Offset)
		case 'k':
			w.Write(r.Key)
		case 'v':
			w.Write(r.Value)
		case 'K':
			fmt.Fprintf(w, "%x", r.Key)
		case 'V':
			fmt.Fprintf(w, "%x", r.Value)
		case 'T':
			fmt.Fprint(w, r.Timestamp.UnixMilli())
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					io.WriteString(w, ",")
				}
				fmt.Fprintf(w, "%s=%s", h.Key, h.Value)
			}
		default:
			fmt.Fprintf(w, "%%%c", p.dir)
		}
	}
}
