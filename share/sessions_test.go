package share

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

func TestNextEpoch(t *testing.T) {
	for _, c := range []struct{ in, want int32 }{
		{InitialEpoch, 1},
		{1, 2},
		{41, 42},
		{math.MaxInt32, 1}, // wraps to 1, as Kafka
		{FinalEpoch, 1},
	} {
		if got := NextEpoch(c.in); got != c.want {
			t.Errorf("NextEpoch(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestSessions_EpochWraps: a session at the largest epoch moves to 1.
func TestSessions_EpochWraps(t *testing.T) {
	c, _, _ := newTestCache()
	s := NewSessions(c)
	k := SessionKey{"g", "m1"}
	if _, code := s.Fetch(nil, k, InitialEpoch, nil, nil); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	s.mu.Lock()
	s.sessions[k].epoch = math.MaxInt32
	s.mu.Unlock()
	if code := s.Acknowledge(nil, k, math.MaxInt32); code != 0 {
		t.Fatalf("at the largest epoch: %v", kerr.ErrorForCode(code))
	}
	if code := s.Acknowledge(nil, k, 1); code != 0 {
		t.Fatalf("after the wrap: %v", kerr.ErrorForCode(code))
	}
}

// TestSessions_DataDriven runs testdata/sessions_*.txt: share sessions
// over a Cache whose Persister logs every call. A file is a sequence of
// blocks:
//
//	# comment lines
//	command key=value ...
//	----
//	expected output lines
//	<blank line>
//
// Commands (group g unless group= says otherwise; conn=none is no
// connection):
//
//	config max-sessions=N
//	fetch conn=C member=M epoch=E [add=t:p,...] [forget=t:p,...]
//	ack conn=C member=M epoch=E
//	acquire member=M part=t:p n=N   acquires the next N records for M
//	records part=t:p                its in-flight records: state@deliveries owner
//	close conn=C                    the connection closed
//	leave member=M                  M left the group
//	deleted                         the group was deleted
//	sessions                        every session: epoch, owner, partitions
//
// After the command's own output come the Persister's calls it caused,
// sorted.
func TestSessions_DataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/sessions_*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			h := newSessionHarness()
			runDataDriven(t, path, h.run)
		})
	}
}

type sessionHarness struct {
	cache    *Cache
	persist  *fakePersister
	settings *fakeSettings
	sessions *Sessions
	owners   map[string]*string // conn name → a comparable handle
}

func newSessionHarness() *sessionHarness {
	c, p, s := newTestCache()
	return &sessionHarness{cache: c, persist: p, settings: s, sessions: NewSessions(c), owners: map[string]*string{}}
}

// owner returns conn name's handle: nil for "none", else a pointer made
// once per name (as a *conn is one per connection).
func (h *sessionHarness) owner(name string) any {
	if name == "none" || name == "" {
		return nil
	}
	o, ok := h.owners[name]
	if !ok {
		o = &name
		h.owners[name] = o
	}
	return o
}

func (h *sessionHarness) ownerName(o any) string {
	for name, p := range h.owners {
		if o == any(p) {
			return name
		}
	}
	return "none"
}

func parsePart(s string) TopicIDPartition {
	name, p, _ := strings.Cut(s, ":")
	n, _ := strconv.Atoi(p)
	return TopicIDPartition{TopicID: topicID(name), Partition: int32(n)}
}

func parseParts(s string) []TopicIDPartition {
	if s == "" {
		return nil
	}
	var out []TopicIDPartition
	for _, f := range strings.Split(s, ",") {
		out = append(out, parsePart(f))
	}
	return out
}

func partsString(ps []TopicIDPartition) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s:%d", topicName(p.TopicID), p.Partition))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func (h *sessionHarness) run(t *testing.T, cmd string, args map[string]string) []string {
	group := args["group"]
	if group == "" {
		group = "g"
	}
	atoi := func(k string) int32 {
		n, err := strconv.Atoi(args[k])
		if err != nil {
			t.Fatalf("%s: %s=%q: %v", cmd, k, args[k], err)
		}
		return int32(n)
	}
	key := SessionKey{group, args["member"]}
	var out []string
	switch cmd {
	case "config":
		h.settings.setBroker("group.share.max.share.sessions", int64(atoi("max-sessions")))
	case "fetch":
		parts, code := h.sessions.Fetch(h.owner(args["conn"]), key, atoi("epoch"), parseParts(args["add"]), parseParts(args["forget"]))
		if code != 0 {
			out = append(out, codeString(code))
		} else {
			out = append(out, partsString(parts))
		}
	case "ack":
		out = append(out, codeString(h.sessions.Acknowledge(h.owner(args["conn"]), key, atoi("epoch"))))
	case "acquire":
		tp := parsePart(args["part"])
		h.settings.setGroup(group, "share.auto.offset.reset", "earliest")
		sp, code := h.cache.Get(Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}, &fakeLeader{epoch: 1, hwm: 1000}, true)
		if code != 0 {
			out = append(out, codeString(code))
			break
		}
		now := time.Now()
		off, _ := sp.FetchOffset(now)
		n := int64(atoi("n"))
		for _, a := range sp.Acquire(args["member"], now, []coordinator.BatchSpan{{First: off, Last: off + n - 1}}, int(n)) {
			out = append(out, fmt.Sprintf("acquired %d-%d@%d", a.First, a.Last, a.DeliveryCount))
		}
	case "records":
		tp := parsePart(args["part"])
		sp := h.cache.States(group)[tp]
		if sp == nil {
			out = append(out, "(none)")
			break
		}
		// Runs of one state, delivery count and owner.
		type run struct {
			first, last int64
			st          coordinator.RecordState
			n           int16
			owner       string
		}
		var runs []run
		for off := sp.StartOffset(); off < sp.StartOffset()+sp.InFlight(); off++ {
			st, n, owner := sp.State(off)
			if l := len(runs) - 1; l >= 0 && runs[l].st == st && runs[l].n == n && runs[l].owner == owner {
				runs[l].last = off
				continue
			}
			runs = append(runs, run{off, off, st, n, owner})
		}
		for _, r := range runs {
			out = append(out, strings.TrimSpace(fmt.Sprintf("%d-%d %s@%d %s", r.first, r.last, r.st, r.n, r.owner)))
		}
		if len(runs) == 0 {
			out = append(out, "(none in flight)")
		}
	case "close":
		h.sessions.Close(h.owner(args["conn"]))
	case "leave":
		h.sessions.MemberLeft(group, args["member"])
	case "deleted":
		h.sessions.GroupDeleted(group)
	case "sessions":
		h.sessions.mu.Lock()
		for k, s := range h.sessions.sessions {
			out = append(out, fmt.Sprintf("%s/%s epoch=%d owner=%s %s", k.Group, k.Member, s.epoch, h.ownerName(s.owner), partsString(s.parts)))
		}
		h.sessions.mu.Unlock()
		slices.Sort(out)
		if len(out) == 0 {
			out = append(out, "(none)")
		}
	default:
		t.Fatalf("unknown command %q", cmd)
	}
	return append(out, h.persist.takeCalls()...)
}

// runDataDriven runs the blocks of the file at path through run, which
// answers a command with its output lines; with -rewrite it writes the
// actual output back instead of failing.
func runDataDriven(t *testing.T, path string, run func(t *testing.T, cmd string, args map[string]string) []string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var rewritten []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			rewritten = append(rewritten, l)
			continue
		}
		cmdLine, at := l, i+1
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command without ----", path, at)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		fields := strings.Fields(cmdLine)
		args := map[string]string{}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			args[k] = v
		}
		got := run(t, fields[0], args)
		if !slices.Equal(got, want) && !*rewrite {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, at, cmdLine, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		rewritten = append(rewritten, cmdLine, "----")
		rewritten = append(rewritten, got...)
		if i < len(lines) {
			rewritten = append(rewritten, "")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(rewritten, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
