package coordinator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnDataDriven runs testdata/txn_*.txt, in the format of
// TestDataDriven, against a TxnCoordinator and the group Coordinator it
// keeps transactional offsets in. Marker writes made while a command runs
// are printed after its output. Commands:
//
//	open [max-timeout=15m] [abort-interval=10s] [expiration=168h]
//	     [expire-interval=1h] [meta-max=4096] [topics=t:2,u:1]
//	init id=a|- [timeout=1m] [pid=1000 epoch=0] [version=4]
//	add id=a pid=1000 epoch=0 parts=t:0,1;u:0 [version=3]
//	add-batch [version=4] a@1000/0=t:0;u:0 verify:b@1001/0=t:1 ...
//	add-offsets id=a pid=1000 epoch=0 group=g [version=3]
//	txn-commit id=a pid=1000 epoch=0 group=g offsets=t:0=5,1=6
//	           [gen=1 member=m instance=i meta=x version=3]
//	end id=a pid=1000 epoch=0 commit=true [version=4]
//	produce pid=1000 epoch=0 tp=t:0 [implicit=true]
//	describe a b ...
//	list [states=Ongoing,...] [pids=1000,...] [duration=1s] [pattern=re] [version=2]
//	show id=a            (internal state, including groups and last epoch)
//	pending group=g      (pending transactional offsets)
//	fail-markers [n=1]   (the next n WriteMarkers calls fail)
//	force-epoch id=a epoch=32765 [state=Empty]
//	advance 10s | restart | crash
//
// and the group commands of TestDataDriven (join, sync, commit, fetch,
// committed, describe-group).
func TestTxnDataDriven(t *testing.T) {
	forEachDataFile(t, "testdata/txn_*.txt", nil, func(t *testing.T, path string) {
		h := newTxnHarness(t)
		defer h.close()
		runDataDriven(t, path, h.run)
	})
}

type txnHarness struct {
	t    *testing.T
	g    *harness // the group coordinator and the shared clock
	dir  string
	cfg  TxnConfig
	tc   *TxnCoordinator
	mu   sync.Mutex
	log  []string // marker writes not yet printed
	fail int      // WriteMarkers calls left to fail
	pid  int64
}

func newTxnHarness(t *testing.T) *txnHarness {
	h := &txnHarness{t: t, g: newHarness(t), dir: t.TempDir(), pid: 1000}
	h.g.cfg.InitialRebalanceDelay = -1
	h.cfg = TxnConfig{
		Now:       h.g.clock.Now,
		AfterFunc: h.g.clock.AfterFunc,
		AllocateProducerID: func() (int64, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.pid++
			return h.pid - 1, nil
		},
		WriteMarkers: h.writeMarkers,
	}
	return h
}

func (h *txnHarness) writeMarkers(_ context.Context, _ string, pid int64, epoch int16, commit, _ bool, parts map[string][]int32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	kind := "ABORT"
	if commit {
		kind = "COMMIT"
	}
	var ps []string
	for _, topic := range sortedKeys(parts) {
		var ns []string
		for _, p := range parts[topic] {
			ns = append(ns, strconv.Itoa(int(p)))
		}
		ps = append(ps, topic+":"+strings.Join(ns, ","))
	}
	line := fmt.Sprintf("markers: pid=%d epoch=%d %s %s", pid, epoch, kind, strings.Join(ps, " "))
	if h.fail > 0 {
		h.fail--
		h.log = append(h.log, line+" (failed)")
		return errors.New("injected marker failure")
	}
	h.log = append(h.log, line)
	return nil
}

func (h *txnHarness) open() {
	h.g.cfg.Dir = h.g.dir
	h.g.open()
	h.cfg.Dir = h.dir
	h.cfg.Groups = h.g.c
	h.cfg.TopicPartitions = h.g.cfg.TopicPartitions
	tc, err := OpenTxn(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.tc = tc
}

func (h *txnHarness) close() {
	if h.tc != nil {
		h.tc.Close()
	}
	h.g.close()
}

func (h *txnHarness) drainMarkers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.log
	h.log = nil
	return out
}

func (h *txnHarness) run(line string) string {
	fields := strings.Fields(line)
	cmd, a := fields[0], parseArgs(fields[1:])
	t := h.t
	if cmd == "open" {
		h.cfg.MaxTimeout = a.dur(t, "max-timeout", 0)
		h.cfg.AbortTimedOutInterval = a.dur(t, "abort-interval", 0)
		h.cfg.IDExpiration = a.dur(t, "expiration", 0)
		h.cfg.RemoveExpiredInterval = a.dur(t, "expire-interval", 0)
		h.g.cfg.OffsetMetadataMaxSize = int(a.int(t, "meta-max", 0))
		if topics := a.list("topics"); topics != nil {
			parts := map[string]int32{}
			for _, tp := range topics {
				name, n, _ := strings.Cut(tp, ":")
				v, _ := strconv.Atoi(n)
				parts[name] = int32(v)
			}
			h.g.cfg.TopicPartitions = func(topic string) (int32, bool) { n, ok := parts[topic]; return n, ok }
		}
		h.open()
		return strings.Join(h.drainMarkers(), "\n")
	}
	if h.tc == nil {
		h.open()
	}
	var out []string
	i16 := func(k string, def int64) int16 { return int16(a.int(t, k, def)) }
	switch cmd {
	case "init":
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = i16("version", 4)
		if id := a.str("id", "a"); id != "-" {
			req.TransactionalID = &id
		}
		req.TransactionTimeoutMillis = int32(a.dur(t, "timeout", time.Minute).Milliseconds())
		req.ProducerID, req.ProducerEpoch = a.int(t, "pid", -1), i16("epoch", -1)
		r := h.tc.InitProducerID(context.Background(), req)
		if r.ErrorCode != 0 {
			out = append(out, fmt.Sprintf("%s pid=%d epoch=%d", errName(r.ErrorCode), r.ProducerID, r.ProducerEpoch))
		} else {
			out = append(out, fmt.Sprintf("ok pid=%d epoch=%d", r.ProducerID, r.ProducerEpoch))
		}
	case "add":
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = i16("version", 3)
		req.TransactionalID = a.str("id", "a")
		req.ProducerID, req.ProducerEpoch = a.int(t, "pid", 1000), i16("epoch", 0)
		for _, tp := range parseTopicParts(a.str("parts", "")) {
			req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tp.topic, Partitions: tp.partitions})
		}
		r := h.tc.AddPartitionsToTxn(context.Background(), req)
		var parts []string
		for _, rt := range r.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d=%s", rt.Topic, p.Partition, errName(p.ErrorCode)))
			}
		}
		out = append(out, strings.Join(parts, " "))
	case "add-batch":
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = i16("version", 4)
		for _, f := range fields[1:] {
			if !strings.Contains(f, "@") {
				continue
			}
			txn := kmsg.NewAddPartitionsToTxnRequestTransaction()
			f, txn.VerifyOnly = strings.CutPrefix(f, "verify:")
			head, topics, _ := strings.Cut(f, "=")
			id, ident, _ := strings.Cut(head, "@")
			pid, epoch, _ := strings.Cut(ident, "/")
			txn.TransactionalID = id
			p, _ := strconv.ParseInt(pid, 10, 64)
			e, _ := strconv.Atoi(epoch)
			txn.ProducerID, txn.ProducerEpoch = p, int16(e)
			for _, tp := range parseTopicParts(topics) {
				txn.Topics = append(txn.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.topic, Partitions: tp.partitions})
			}
			req.Transactions = append(req.Transactions, txn)
		}
		r := h.tc.AddPartitionsToTxn(context.Background(), req)
		out = append(out, fmt.Sprintf("top=%s", errName(r.ErrorCode)))
		for _, rt := range r.Transactions {
			var parts []string
			for _, tt := range rt.Topics {
				for _, p := range tt.Partitions {
					parts = append(parts, fmt.Sprintf("%s/%d=%s", tt.Topic, p.Partition, errName(p.ErrorCode)))
				}
			}
			out = append(out, rt.TransactionalID+": "+strings.Join(parts, " "))
		}
	case "add-offsets":
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = i16("version", 3)
		req.TransactionalID = a.str("id", "a")
		req.ProducerID, req.ProducerEpoch = a.int(t, "pid", 1000), i16("epoch", 0)
		req.Group = a.str("group", "g")
		out = append(out, errName(h.tc.AddOffsetsToTxn(req).ErrorCode))
	case "txn-commit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = i16("version", 3)
		req.TransactionalID = a.str("id", "a")
		req.ProducerID, req.ProducerEpoch = a.int(t, "pid", 1000), i16("epoch", 0)
		req.Group = a.str("group", "g")
		req.Generation = int32(a.int(t, "gen", -1))
		req.MemberID = a.str("member", "")
		req.InstanceID = a.strp("instance")
		meta := a.strp("meta")
		for _, tp := range strings.Split(a.str("offsets", ""), ";") {
			name, ps, _ := strings.Cut(tp, ":")
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = name
			for _, po := range strings.Split(ps, ",") {
				p, o, _ := strings.Cut(po, "=")
				pn, _ := strconv.Atoi(p)
				on, _ := strconv.Atoi(o)
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata = int32(pn), int64(on), meta
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		r := h.tc.TxnOffsetCommit(req)
		var parts []string
		for _, rt := range r.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d=%s", rt.Topic, p.Partition, errName(p.ErrorCode)))
			}
		}
		out = append(out, strings.Join(parts, " "))
	case "end":
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = i16("version", 4)
		req.TransactionalID = a.str("id", "a")
		req.ProducerID, req.ProducerEpoch = a.int(t, "pid", 1000), i16("epoch", 0)
		req.Commit = a.str("commit", "true") == "true"
		r := h.tc.EndTxn(context.Background(), req)
		s := errName(r.ErrorCode)
		if req.Version >= 5 {
			s += fmt.Sprintf(" pid=%d epoch=%d", r.ProducerID, r.ProducerEpoch)
		}
		out = append(out, s)
	case "produce":
		topic, p, _ := strings.Cut(a.str("tp", "t:0"), ":")
		pn, _ := strconv.Atoi(p)
		code := h.tc.CheckProduce(a.int(t, "pid", 1000), i16("epoch", 0), topic, int32(pn), a.str("implicit", "") == "true")
		out = append(out, errName(code))
	case "describe":
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = a.pos
		for _, d := range h.tc.DescribeTransactions(req).TransactionStates {
			if d.ErrorCode != 0 {
				out = append(out, fmt.Sprintf("%s: %s", d.TransactionalID, errName(d.ErrorCode)))
				continue
			}
			var partitionSet []string
			for _, dt := range d.Topics {
				var ns []string
				for _, p := range dt.Partitions {
					ns = append(ns, strconv.Itoa(int(p)))
				}
				partitionSet = append(partitionSet, dt.Topic+":"+strings.Join(ns, ","))
			}
			start := "-"
			if d.StartTimestamp >= 0 {
				start = time.UnixMilli(d.StartTimestamp).UTC().Format("15:04:05")
			}
			out = append(out, fmt.Sprintf("%s: state=%s pid=%d epoch=%d timeout=%dms start=%s partitions=%s",
				d.TransactionalID, d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, start, strings.Join(partitionSet, " ")))
		}
	case "list":
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = i16("version", 1)
		req.StateFilters = a.list("states")
		for _, p := range a.list("pids") {
			n, _ := strconv.ParseInt(p, 10, 64)
			req.ProducerIDFilters = append(req.ProducerIDFilters, n)
		}
		req.DurationFilterMillis = a.dur(t, "duration", -time.Millisecond).Milliseconds()
		req.TransactionalIDPattern = a.strp("pattern")
		r := h.tc.ListTransactions(req)
		line := errName(r.ErrorCode)
		if len(r.UnknownStateFilters) > 0 {
			line += " unknown-states=" + strings.Join(r.UnknownStateFilters, ",")
		}
		out = append(out, line)
		for _, lt := range r.TransactionStates {
			out = append(out, fmt.Sprintf("  %s pid=%d state=%s", lt.TransactionalID, lt.ProducerID, lt.TransactionState))
		}
	case "show":
		m, ok := h.tc.stateOf(a.str("id", "a"))
		if !ok {
			out = append(out, "(none)")
			break
		}
		s := fmt.Sprintf("%s pid=%d epoch=%d last-epoch=%d", m.state, m.producerID, m.epoch, m.lastEpoch)
		if m.prevProducerID != noProducerID {
			s += fmt.Sprintf(" prev-pid=%d", m.prevProducerID)
		}
		if m.nextProducerID != noProducerID {
			s += fmt.Sprintf(" next-pid=%d", m.nextProducerID)
		}
		if gs := m.sortedGroups(); len(gs) > 0 {
			s += " groups=" + strings.Join(gs, ",")
		}
		out = append(out, s)
	case "pending":
		p := h.g.c.PendingTxnOffsets(a.str("group", "g"))
		if p == nil {
			out = append(out, "pending: none")
		}
		for _, pid := range sortedInt64Keys(p) {
			var parts []string
			for _, topic := range sortedKeys(p[pid]) {
				for _, n := range sortedKeys(p[pid][topic]) {
					parts = append(parts, fmt.Sprintf("%s/%d=%d", topic, n, p[pid][topic][n]))
				}
			}
			out = append(out, fmt.Sprintf("pending pid=%d: %s", pid, strings.Join(parts, " ")))
		}
	case "force-epoch":
		// Jump an id's epoch (and, with state=, its state) to test epoch
		// exhaustion without 32k requests.
		h.tc.mu.Lock()
		e := h.tc.txns[a.str("id", "a")]
		m := e.meta.clone()
		m.epoch = i16("epoch", 0)
		if st, ok := parseTxnState(a.str("state", m.state.String())); ok {
			m.state = st
		}
		if err := h.tc.transitionLocked(e, m); err != nil {
			t.Fatal(err)
		}
		h.tc.mu.Unlock()
	case "fail-markers":
		h.mu.Lock()
		h.fail = int(a.int(t, "n", 1))
		h.mu.Unlock()
	case "advance":
		d, err := time.ParseDuration(a.pos[0])
		if err != nil {
			t.Fatal(err)
		}
		h.g.clock.Advance(d)
		out = append(out, h.g.settle()...)
	case "restart", "crash":
		if cmd == "crash" {
			// Both files as kill -9 leaves them: copied before Close.
			gdir, tdir := t.TempDir(), t.TempDir()
			copyFile(t, filepath.Join(h.g.dir, dbFileName), filepath.Join(gdir, dbFileName))
			copyFile(t, filepath.Join(h.dir, txnDBFileName), filepath.Join(tdir, txnDBFileName))
			h.close()
			h.g.dir, h.dir = gdir, tdir
		} else {
			h.close()
		}
		out = append(out, h.g.settle()...)
		h.drainMarkers() // calls of the closed coordinators, if any
		h.open()
	case "describe-group":
		out = append(out, h.g.describe(a)...)
	default:
		// A group coordinator command.
		if s := h.g.run(line); s != "" {
			out = append(out, s)
		}
	}
	out = append(out, h.drainMarkers()...)
	return strings.Join(out, "\n")
}
