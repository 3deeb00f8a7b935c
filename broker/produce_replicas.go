package broker

// What a Produce does beyond the local append in a cluster: only the
// partition's leader takes it, a leader whose etcd session may have lapsed
// takes nothing, acks=all needs min.insync.replicas in the ISR, and its
// answer waits until the high watermark (the smallest log end offset over
// the ISR) has passed the batch.

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/replication"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicaWait is an acks=all batch waiting for its followers.
type replicaWait struct {
	ti, pi int // where its answer is in the response
	p      *partition
	ldr    *replication.Leader
	target int64 // the batch's last offset + 1
	minISR int64
}

// produceLeadership checks that this broker may take a produce for p: nil
// and 0 on a single node; in a cluster the partition's Leader, or
// NOT_LEADER_OR_FOLLOWER.
func (b *Broker) produceLeadership(p *partition) (*replication.Leader, int16, string) {
	if b.cluster == nil {
		return nil, 0, ""
	}
	ldr := p.leader.Load()
	if ldr == nil && p.log != nil && b.leadershipPending(p) {
		// A client sent here by KIP-951's hint of the previous leader
		// (NOT_LEADER_OR_FOLLOWER with this broker as the new one) may be
		// a moment ahead of this broker: its metadata may not yet show
		// the election, or show it with the role not yet applied.
		// Answering NOT_LEADER_OR_FOLLOWER now, with the old leader or no
		// hint at all, would send it to a metadata refresh (franz-go: at
		// most every 5 s); the leadership is on its way.
		b.awaitMetadata(leaderMoveWait, func() bool { return p.leader.Load() != nil || !b.leadershipPending(p) })
		ldr = p.leader.Load()
	}
	if p.log == nil || ldr == nil {
		return nil, kerr.NotLeaderForPartition.Code, "This server is not the leader for that topic-partition."
	}
	if b.cluster.node.Fenced() {
		// Our etcd session may have expired: another broker may be
		// elected leader at any moment, so this one takes no writes.
		return nil, kerr.NotLeaderForPartition.Code, "This broker has lost its session with the cluster metadata."
	}
	return ldr, 0, ""
}

// leaderMoveWait bounds how long a request waits for a leadership of
// this broker that is on its way (leadershipPending).
const leaderMoveWait = time.Second

// leadershipPending reports whether this broker is about to lead p: the
// metadata names it leader, in its current registration, but the role is
// not applied yet (applyRole makes the Leader a moment after the metadata
// is stored), or p's leader, another broker, is in its controlled shutdown
// while this broker is in p's ISR, so it may be elected at any moment.
func (b *Broker) leadershipPending(p *partition) bool {
	mp := p.meta.Load()
	if mp == nil || mp.Leader < 0 {
		return false
	}
	md := b.cluster.node.Metadata()
	if md == nil {
		return false
	}
	if mp.Leader == b.nodeID {
		self, ok := md.Brokers[b.nodeID]
		return ok && (mp.LeaderBrokerEpoch == 0 || mp.LeaderBrokerEpoch == self.Epoch)
	}
	if !slices.Contains(mp.ISR, b.nodeID) {
		return false
	}
	br, ok := md.Brokers[mp.Leader]
	return ok && br.ControlledShutdown
}

// minInsync is the min.insync.replicas check of an acks=all produce.
func minInsync(ldr *replication.Leader, acks int16, minISR int64) (int16, string) {
	if acks != -1 || minISR <= 1 {
		return 0, ""
	}
	isr := int64(1)
	if ldr != nil {
		isr = int64(ldr.ISRSize())
	}
	if isr < minISR {
		return kerr.NotEnoughReplicas.Code, "The size of the current ISR " + strconv.FormatInt(isr, 10) + " is insufficient to satisfy the min.isr requirement of " + strconv.FormatInt(minISR, 10)
	}
	return 0, ""
}

// awaitReplicas waits until every batch in waits is below its partition's
// high watermark, or until timeout, and sets each partition's answer.
func (b *Broker) awaitReplicas(ctx context.Context, resp *kmsg.ProduceResponse, waits []replicaWait, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, w := range waits {
		code := b.awaitReplica(ctx, w, deadline)
		if code == 0 {
			continue
		}
		sp := &resp.Topics[w.ti].Partitions[w.pi]
		sp.ErrorCode = code
		b.noteNotLeader(code)
		sp.BaseOffset, sp.LogAppendTime = -1, -1
		if resp.Version >= 10 {
			b.produceLeaderHint(resp, sp, w.p)
		}
	}
}

// awaitReplica waits for one batch: 0 once committed (or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR has shrunk below
// min.insync.replicas meanwhile), NOT_LEADER_OR_FOLLOWER when leadership is
// lost first, REQUEST_TIMED_OUT at the deadline.
func (b *Broker) awaitReplica(ctx context.Context, w replicaWait, deadline time.Time) int16 {
	// Leadership changes do not close the log's channel: look again at
	// least this often.
	const recheck = 50 * time.Millisecond
	for {
		ch := w.p.log.Notify()
		if w.p.log.HighWatermark() >= w.target {
			// Only a high watermark this leader moved commits the batch:
			// once leadership is lost, this broker's log may have been
			// truncated to the next leader's and its high watermark be
			// past the batch's offsets with that leader's records.
			// Checked after reading the high watermark: a Leader that
			// was replaced never comes back, so the read was made
			// while w.ldr led.
			if w.p.leader.Load() != w.ldr {
				return kerr.NotLeaderForPartition.Code
			}
			if w.minISR > 1 && int64(w.ldr.ISRSize()) < w.minISR {
				return kerr.NotEnoughReplicasAfterAppend.Code
			}
			return 0
		}
		if w.p.leader.Load() != w.ldr {
			return kerr.NotLeaderForPartition.Code
		}
		left := time.Until(deadline)
		if left <= 0 {
			return kerr.RequestTimedOut.Code
		}
		t := time.NewTimer(min(left, recheck))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return kerr.RequestTimedOut.Code
		}
		t.Stop()
	}
}

// leaderHint returns the leader of p as the metadata has it, for the
// KIP-951 hints that spare a client a Metadata round trip after
// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH; false when there is none
// to give (a single node, no leader, or this broker).
func (b *Broker) leaderHint(p *partition) (mp *brokerInfo, leader, epoch int32, ok bool) {
	if b.cluster == nil || p == nil {
		return nil, -1, -1, false
	}
	st := p.meta.Load()
	if st == nil || st.Leader < 0 || st.Leader == b.nodeID {
		return nil, -1, -1, false
	}
	md := b.cluster.node.Metadata()
	br, live := md.Brokers[st.Leader]
	if !live {
		return nil, -1, -1, false
	}
	bi := &brokerInfo{id: br.ID, host: br.Host, port: br.Port}
	if br.Rack != "" {
		bi.rack = &br.Rack
	}
	return bi, st.Leader, st.LeaderEpoch, true
}

// produceLeaderHint adds the new leader to a Produce answer (v10+) that
// sends the client elsewhere.
func (b *Broker) produceLeaderHint(resp *kmsg.ProduceResponse, sp *kmsg.ProduceResponseTopicPartition, p *partition) {
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code && sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
		return
	}
	br, leader, epoch, ok := b.leaderHint(p)
	if !ok {
		return
	}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
	for _, e := range resp.Brokers {
		if e.NodeID == br.id {
			return
		}
	}
	resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: br.id, Host: br.host, Port: br.port, Rack: br.rack})
}
