package coordinator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

// A testdata file is a sequence of blocks:
//
//	# comment lines
//	command key=value key=value ...
//	----
//	expected output lines (none blank)
//	<blank line>
//
// Blocking commands (join, sync) run in goroutines; after every command the
// harness waits until each outstanding call has either returned or is parked
// in the coordinator, then prints the calls that returned, in start order.
func TestDataDriven(t *testing.T) {
	isTxn := func(name string) bool { return strings.HasPrefix(name, "txn_") } // TestTxnDataDriven's
	forEachDataFile(t, "testdata/*.txt", isTxn, func(t *testing.T, path string) {
		h := newHarness(t)
		defer h.close()
		runDataDriven(t, path, h.run)
	})
}

// forEachDataFile runs f as a subtest, named after the file, for every file
// matching glob whose base name skip does not reject (skip may be nil).
func forEachDataFile(t *testing.T, glob string, skip func(name string) bool, f func(t *testing.T, path string)) {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range files {
		if skip != nil && skip(filepath.Base(path)) {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			f(t, path)
		})
	}
}

type ddBlock struct {
	line     int
	comments []string
	cmd      string
	want     string
}

func parseDataDriven(t *testing.T, path string) []ddBlock {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var blocks []ddBlock
	var comments []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "":
			continue
		case strings.HasPrefix(l, "#"):
			comments = append(comments, l)
			continue
		}
		b := ddBlock{line: i + 1, comments: comments, cmd: l}
		comments = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command without ----", path, i+1)
		}
		i += 2
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		b.want = strings.Join(out, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

// runDataDriven runs the commands of the testdata file at path through run
// and compares their output with the file's, or with -rewrite writes the
// actual output back into the file.
func runDataDriven(t *testing.T, path string, run func(cmd string) string) {
	blocks := parseDataDriven(t, path)
	var rewritten strings.Builder
	for _, b := range blocks {
		got := strings.TrimRight(run(b.cmd), "\n")
		if *rewrite {
			for _, c := range b.comments {
				rewritten.WriteString(c + "\n")
			}
			fmt.Fprintf(&rewritten, "%s\n----\n", b.cmd)
			if got != "" {
				rewritten.WriteString(got + "\n")
			}
			rewritten.WriteString("\n")
			continue
		}
		if got != b.want {
			t.Fatalf("%s:%d: %s\n--- got:\n%s\n--- want:\n%s", path, b.line, b.cmd, got, b.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type harness struct {
	t     *testing.T
	dir   string
	clock *manualClock
	cfg   Config
	c     *Coordinator
	ids   int
	calls []*ddCall
	// topics are the partition counts behind Config.Topics (cgh_test.go).
	topics map[string]int32
}

type ddCall struct {
	label    string
	finished atomic.Bool
	out      string
}

func newHarness(t *testing.T) *harness {
	clock := newManualClock()
	h := &harness{t: t, dir: t.TempDir(), clock: clock}
	h.cfg = Config{Now: clock.Now, AfterFunc: clock.AfterFunc}
	return h
}

func (h *harness) open() {
	h.cfg.Dir = h.dir
	c, err := Open(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	c.newUUID = func() string { h.ids++; return strconv.Itoa(h.ids) }
	h.c = c
}

func (h *harness) close() {
	if h.c != nil {
		h.c.Close()
		h.settle()
	}
}

// settle waits until every unreported call has returned or is parked.
func (h *harness) settle() []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		running := 0
		for _, c := range h.calls {
			if !c.finished.Load() {
				running++
			}
		}
		if h.c == nil || h.c.parkedCalls() == running {
			break
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("calls did not settle: %d running, %d parked", running, h.c.parkedCalls())
		}
		time.Sleep(time.Millisecond)
	}
	var out []string
	var rest []*ddCall
	for _, c := range h.calls {
		if c.finished.Load() {
			out = append(out, c.label+": "+c.out)
		} else {
			rest = append(rest, c)
		}
	}
	h.calls = rest
	return out
}

func (h *harness) start(label string, f func() string) {
	c := &ddCall{label: label}
	h.calls = append(h.calls, c)
	go func() {
		c.out = f()
		c.finished.Store(true)
	}()
}

type ddArgs struct {
	pos []string
	kv  map[string]string
}

func parseArgs(fields []string) ddArgs {
	a := ddArgs{kv: map[string]string{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else {
			a.pos = append(a.pos, f)
		}
	}
	return a
}

func (a ddArgs) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a ddArgs) strp(k string) *string {
	if v, ok := a.kv[k]; ok && v != "" {
		return &v
	}
	return nil
}

func (a ddArgs) int(t *testing.T, k string, def int64) int64 {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("bad %s=%q", k, v)
	}
	return n
}

func (a ddArgs) dur(t *testing.T, k string, def time.Duration) time.Duration {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("bad %s=%q", k, v)
	}
	return d
}

func (a ddArgs) list(k string) []string {
	v, ok := a.kv[k]
	if !ok || v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func errName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("error(%d)", code)
}

func (h *harness) run(line string) string {
	fields := strings.Fields(line)
	cmd, a := fields[0], parseArgs(fields[1:])
	t := h.t
	if cmd == "open" {
		h.cfg.InitialRebalanceDelay = a.dur(t, "initial-delay", 0)
		h.cfg.MaxGroupSize = int(a.int(t, "max-size", 0))
		h.cfg.OffsetsRetention = a.dur(t, "retention", 0)
		h.cfg.OffsetsRetentionCheckInterval = a.dur(t, "retention-check", 0)
		h.cfg.OffsetMetadataMaxSize = int(a.int(t, "meta-max", 0))
		if topics := a.list("topics"); topics != nil {
			parts := map[string]int32{}
			for _, tp := range topics {
				name, n, _ := strings.Cut(tp, ":")
				v, _ := strconv.Atoi(n)
				parts[name] = int32(v)
			}
			h.cfg.TopicPartitions = func(topic string) (int32, bool) { n, ok := parts[topic]; return n, ok }
			h.setConsumerTopics(parts)
		}
		h.openConsumer(a)
		h.open()
		return ""
	}
	if h.c == nil {
		h.open()
	}
	var out []string
	switch cmd {
	case "join":
		out = h.join(a)
	case "sync":
		out = h.sync(a)
	case "heartbeat":
		r := h.c.Heartbeat(&kmsg.HeartbeatRequest{
			Version:    int16(a.int(t, "version", 4)),
			Group:      a.str("group", "g"),
			Generation: int32(a.int(t, "gen", -1)),
			MemberID:   a.str("member", ""),
			InstanceID: a.strp("instance"),
		})
		out = append(out, errName(r.ErrorCode))
	case "leave":
		out = h.leave(a)
	case "commit":
		out = h.commit(a)
	case "fetch":
		out = h.fetch(a)
	case "offsetdelete":
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = a.str("group", "g")
		for _, tp := range parseTopicParts(a.str("topics", "")) {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = tp.topic
			for _, p := range tp.partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
			}
			req.Topics = append(req.Topics, rt)
		}
		r := h.c.OffsetDelete(req)
		line := errName(r.ErrorCode)
		for _, rt := range r.Topics {
			for _, p := range rt.Partitions {
				line += fmt.Sprintf(" %s/%d=%s", rt.Topic, p.Partition, errName(p.ErrorCode))
			}
		}
		out = append(out, line)
	case "describe":
		out = h.describe(a)
	case "list":
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = int16(a.int(t, "version", 5))
		req.StatesFilter = a.list("states")
		req.TypesFilter = a.list("types")
		r := h.c.ListGroups(req)
		for _, g := range r.Groups {
			out = append(out, fmt.Sprintf("%s state=%s type=%s protocol-type=%s", g.Group, g.GroupState, g.GroupType, g.ProtocolType))
		}
		if len(out) == 0 {
			out = append(out, "(none)")
		}
	case "deletegroups":
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = a.pos
		for _, g := range h.c.DeleteGroups(req).Groups {
			out = append(out, fmt.Sprintf("%s: %s", g.Group, errName(g.ErrorCode)))
		}
	case "committed":
		m := h.c.Committed(a.str("group", "g"))
		var parts []string
		for _, topic := range sortedKeys(m) {
			for _, p := range sortedKeys(m[topic]) {
				parts = append(parts, fmt.Sprintf("%s/%d=%d", topic, p, m[topic][p]))
			}
		}
		out = append(out, "committed: "+strings.Join(parts, " "))
	case "delete-topic":
		h.c.DeleteTopicOffsets(a.pos[0])
	case "advance":
		d, err := time.ParseDuration(a.pos[0])
		if err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(d)
	case "restart", "crash":
		if cmd == "crash" {
			// Copy the file as a kill -9 would leave it: no Close first.
			dst := t.TempDir()
			copyFile(t, filepath.Join(h.dir, dbFileName), filepath.Join(dst, dbFileName))
			h.c.Close()
			h.dir = dst
		} else {
			h.c.Close()
		}
		out = append(out, h.settle()...)
		h.open()
	default:
		var ok bool
		if out, ok = h.runConsumer(cmd, a); !ok {
			t.Fatalf("unknown command %q", cmd)
		}
	}
	out = append(out, h.settle()...)
	return strings.Join(out, "\n")
}

func copyFile(t *testing.T, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// consumerMetadata encodes a consumer-protocol subscription to topics.
func consumerMetadata(topics []string, userData string) []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 1
	md.Topics = topics
	if userData != "" {
		md.UserData = []byte(userData)
	}
	return md.AppendTo(nil)
}

func (h *harness) join(a ddArgs) []string {
	t := h.t
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = int16(a.int(t, "version", 9))
	req.Group = a.str("group", "g")
	req.MemberID = a.str("member", "")
	req.InstanceID = a.strp("instance")
	req.SessionTimeoutMillis = int32(a.dur(t, "session", 10*time.Second).Milliseconds())
	req.RebalanceTimeoutMillis = int32(a.dur(t, "rebalance", 30*time.Second).Milliseconds())
	req.ProtocolType = a.str("type", "consumer")
	var md []byte
	if raw, ok := a.kv["meta"]; ok {
		md = []byte(raw)
	} else if owned, ok := a.kv["owned"]; ok {
		// A cooperative member's subscription: what it owns too.
		m := kmsg.NewConsumerMemberMetadata()
		m.Version, m.Topics = 1, a.list("topics")
		for _, tp := range parseTopicParts(owned) {
			m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.topic, Partitions: tp.partitions})
		}
		md = m.AppendTo(nil)
	} else {
		md = consumerMetadata(a.list("topics"), a.str("userdata", ""))
	}
	for _, name := range a.list("protocols") {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: md})
	}
	client := a.str("client", "c")
	label := "join " + client
	if req.MemberID != "" {
		label = "join " + req.MemberID
	}
	c := h.c
	h.start(label, func() string {
		r := c.JoinGroup(context.Background(), req, client, "/127.0.0.1")
		if r.ErrorCode != 0 {
			return fmt.Sprintf("%s member=%s", errName(r.ErrorCode), r.MemberID)
		}
		s := fmt.Sprintf("ok member=%s gen=%d protocol=%s leader=%s", r.MemberID, r.Generation, deref(r.Protocol), r.LeaderID)
		if len(r.Members) > 0 {
			var ms []string
			for _, m := range r.Members {
				ms = append(ms, m.MemberID)
			}
			s += " members=" + strings.Join(ms, ",")
		}
		return s
	})
	out := h.settle()
	if len(h.calls) > 0 && h.calls[len(h.calls)-1].label == label {
		out = append(out, label+": pending")
	}
	return out
}

func (h *harness) sync(a ddArgs) []string {
	t := h.t
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = int16(a.int(t, "version", 5))
	req.Group = a.str("group", "g")
	req.MemberID = a.str("member", "")
	req.InstanceID = a.strp("instance")
	req.Generation = int32(a.int(t, "gen", -1))
	req.ProtocolType = a.strp("ptype")
	req.Protocol = a.strp("pname")
	for _, as := range a.list("assign") {
		id, v, _ := strings.Cut(as, ":")
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(v)})
	}
	// cassign=m1@t:0,1/m2@t:2 gives consumer-protocol assignments, and
	// "consumer" prints the assignment received as one.
	consumer := slices.Contains(a.pos, "consumer")
	if v, ok := a.kv["cassign"]; ok {
		for _, as := range strings.Split(v, "/") {
			id, parts, _ := strings.Cut(as, "@")
			x := partitionSet{}
			for _, tp := range parseTopicParts(parts) {
				for _, p := range tp.partitions {
					x.add(tp.topic, p)
				}
			}
			req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: encodeAssignment(x, nil)})
		}
	}
	label := "sync " + req.MemberID
	c := h.c
	h.start(label, func() string {
		r := c.SyncGroup(context.Background(), req)
		if r.ErrorCode != 0 {
			return errName(r.ErrorCode)
		}
		if consumer {
			x, err := parseAssignment(r.MemberAssignment, map[string]ConsumerTopic{"t": {Partitions: 1 << 20}, "u": {Partitions: 1 << 20}})
			if err != nil {
				return "ok malformed assignment: " + err.Error()
			}
			return fmt.Sprintf("ok assignment=%s protocol=%s", x, deref(r.Protocol))
		}
		return fmt.Sprintf("ok assignment=%q protocol=%s", r.MemberAssignment, deref(r.Protocol))
	})
	out := h.settle()
	if len(h.calls) > 0 && h.calls[len(h.calls)-1].label == label {
		out = append(out, label+": pending")
	}
	return out
}

func (h *harness) leave(a ddArgs) []string {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = int16(a.int(h.t, "version", 5))
	req.Group = a.str("group", "g")
	req.MemberID = a.str("member", "")
	for _, m := range a.list("members") {
		lm := kmsg.NewLeaveGroupRequestMember()
		if inst, ok := strings.CutPrefix(m, "instance:"); ok {
			lm.InstanceID = &inst
		} else {
			id, inst, _ := strings.Cut(m, "/")
			lm.MemberID = id
			if inst != "" {
				lm.InstanceID = &inst
			}
		}
		req.Members = append(req.Members, lm)
	}
	r := h.c.LeaveGroup(req)
	line := errName(r.ErrorCode)
	for _, m := range r.Members {
		line += fmt.Sprintf(" %s/%s=%s", m.MemberID, deref(m.InstanceID), errName(m.ErrorCode))
	}
	return []string{line}
}

type topicParts struct {
	topic      string
	partitions []int32
}

// parseTopicParts parses "t:0,1;u:2".
func parseTopicParts(s string) []topicParts {
	if s == "" {
		return nil
	}
	var out []topicParts
	for _, tp := range strings.Split(s, ";") {
		name, ps, _ := strings.Cut(tp, ":")
		x := topicParts{topic: name, partitions: []int32{}}
		for _, p := range strings.Split(ps, ",") {
			if p == "" {
				continue
			}
			n, _ := strconv.Atoi(p)
			x.partitions = append(x.partitions, int32(n))
		}
		out = append(out, x)
	}
	return out
}

// commit: offsets="t:0=10,1=20;u:0=5"
func (h *harness) commit(a ddArgs) []string {
	t := h.t
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = int16(a.int(t, "version", 9))
	req.Group = a.str("group", "g")
	req.Generation = int32(a.int(t, "gen", -1))
	req.MemberID = a.str("member", "")
	req.InstanceID = a.strp("instance")
	meta := a.strp("meta")
	for _, tp := range strings.Split(a.str("offsets", ""), ";") {
		name, ps, _ := strings.Cut(tp, ":")
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = name
		for _, po := range strings.Split(ps, ",") {
			p, o, _ := strings.Cut(po, "=")
			pn, _ := strconv.Atoi(p)
			on, _ := strconv.Atoi(o)
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = int32(pn), int64(on), meta
			rp.LeaderEpoch = int32(a.int(t, "epoch", -1))
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	r := h.c.OffsetCommit(req)
	var parts []string
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d=%s", rt.Topic, p.Partition, errName(p.ErrorCode)))
		}
	}
	return []string{strings.Join(parts, " ")}
}

// fetch: group=g topics="t:0,1" (absent: all); version>=8: groups=g1,g2.
func (h *harness) fetch(a ddArgs) []string {
	t := h.t
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = int16(a.int(t, "version", 7))
	req.RequireStable = a.str("stable", "") == "true"
	partitionSet := parseTopicParts(a.str("topics", ""))
	fmtPart := func(topic string, p int32, off int64, epoch int32, md *string, code int16) string {
		s := fmt.Sprintf("%s/%d=%d", topic, p, off)
		if epoch != -1 {
			s += fmt.Sprintf(" epoch=%d", epoch)
		}
		if md != nil && *md != "" {
			s += " meta=" + *md
		}
		if code != 0 {
			s += " " + errName(code)
		}
		return s
	}
	var out []string
	if req.Version >= 8 {
		for _, g := range a.list("groups") {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = g
			for _, tp := range partitionSet {
				rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: tp.topic, Partitions: tp.partitions})
			}
			req.Groups = append(req.Groups, rg)
		}
		for _, g := range h.c.OffsetFetch(req).Groups {
			line := g.Group + ": " + errName(g.ErrorCode)
			for _, rt := range g.Topics {
				for _, p := range rt.Partitions {
					line += ", " + fmtPart(rt.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
				}
			}
			out = append(out, line)
		}
		return out
	}
	req.Group = a.str("group", "g")
	for _, tp := range partitionSet {
		req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: tp.topic, Partitions: tp.partitions})
	}
	r := h.c.OffsetFetch(req)
	line := errName(r.ErrorCode)
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			line += ", " + fmtPart(rt.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
		}
	}
	return []string{line}
}

func (h *harness) describe(a ddArgs) []string {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = int16(a.int(h.t, "version", 5))
	req.Groups = a.pos
	if len(req.Groups) == 0 {
		req.Groups = []string{"g"}
	}
	r := h.c.DescribeGroups(req)
	var out []string
	for _, g := range r.Groups {
		line := fmt.Sprintf("%s: state=%s", g.Group, g.State)
		if g.ErrorCode != 0 {
			line += " " + errName(g.ErrorCode)
		}
		h.c.mu.Lock()
		if ig := h.c.groups[g.Group]; ig != nil {
			line += fmt.Sprintf(" type=%s protocol=%s gen=%d leader=%s", g.ProtocolType, g.Protocol, ig.generation, ig.leader)
		}
		h.c.mu.Unlock()
		out = append(out, line)
		for _, m := range g.Members {
			ml := fmt.Sprintf("  %s client=%s", m.MemberID, m.ClientID)
			if m.InstanceID != nil {
				ml += " instance=" + *m.InstanceID
			}
			if m.MemberAssignment != nil {
				ml += fmt.Sprintf(" assignment=%q", m.MemberAssignment)
			}
			if len(m.ProtocolMetadata) > 0 {
				var md kmsg.ConsumerMemberMetadata
				if err := md.ReadFrom(m.ProtocolMetadata); err == nil {
					ml += " topics=" + strings.Join(md.Topics, ",")
				}
			}
			out = append(out, ml)
		}
	}
	return out
}
