package broker

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/metadata"
)

// ControlledShutdown moves the leadership of the partitions this broker
// leads to other in-sync replicas before it stops, as Kafka's controlled
// shutdown does (controlled.shutdown.enable): the broker says in its
// registration that it is stopping, the controller elects new leaders
// among the other live ISR members (a partition with none becomes
// leaderless, as when the broker dies) and takes it out of the ISRs, and
// this waits until the metadata shows none led here and this broker in no
// ISR but those it is alone in (or no other broker left to take them), at
// most controlled.shutdown.timeout.ms or until ctx ends. Meanwhile the broker
// serves on: producers are told NOT_LEADER_OR_FOLLOWER and find the new
// leaders, so a rolling restart costs them no session-timeout wait. Close
// follows. On a single node, or with controlled.shutdown.enable=false, it
// does nothing.
func (b *Broker) ControlledShutdown(ctx context.Context) error {
	if b.cluster == nil || !b.cfg.boolProp("controlled.shutdown.enable") {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(b.cfg.int64Prop("controlled.shutdown.timeout.ms"))*time.Millisecond)
	defer cancel()
	start := time.Now()
	md := b.cluster.node.Metadata()
	led := b.partitionsLedIn(md)
	if led == 0 || !b.othersCanLead(md) {
		return nil // nothing to hand over, or nobody to take it
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	err := b.cluster.node.SetControlledShutdown(wctx)
	wcancel()
	if err != nil {
		b.log.Warn("controlled shutdown: could not say so in the registration; stopping without moving leadership", "err", err)
		return err
	}
	for {
		md, changed := b.cluster.node.Subscribe()
		if left := b.partitionsLedIn(md); left == 0 || !b.othersCanLead(md) {
			moved := time.Now()
			b.drainMovedClients(ctx, moved)
			b.log.Info("controlled shutdown: the leadership of this broker's partitions moved, and it left their ISRs", "partitions", led,
				"took", time.Since(start).Round(time.Millisecond), "drained", time.Since(moved).Round(time.Millisecond))
			return nil
		} else if ctx.Err() != nil {
			b.log.Warn("controlled shutdown: stopping with partitions still led here", "partitions", left, "of", led, "err", ctx.Err())
			return ctx.Err()
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
}

// Draining after the leadership moved: a client learns of a partition's
// new leader from an answer of this broker (NOT_LEADER_OR_FOLLOWER with
// KIP-951's leader and endpoint, which franz-go and the Java client follow
// at once); a connection closed under it sends the client to a metadata
// refresh instead, which franz-go makes at most every 5 s
// (metadata.min.age), so a producer of a rolling restart would wait that
// long. Kafka keeps serving while its shutdown goes on; Gregor's is quick,
// so it serves on until no client has been told for drainQuiet (the
// waiting acks=all produces are told within 50 ms, awaitReplica), at most
// drainMax.
const (
	drainQuiet = 300 * time.Millisecond
	drainMax   = 3 * time.Second
)

func (b *Broker) drainMovedClients(ctx context.Context, moved time.Time) {
	for {
		last := max(moved.UnixNano(), b.toldNotLeader.Load())
		quiet := time.Since(time.Unix(0, last))
		if quiet >= drainQuiet || time.Since(moved) >= drainMax {
			return
		}
		t := time.NewTimer(drainQuiet - quiet)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// noteNotLeader records that a client was just told a partition is not
// led here (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH), for the drain.
func (b *Broker) noteNotLeader(code int16) {
	if code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code {
		b.toldNotLeader.Store(time.Now().UnixNano())
	}
}

// othersCanLead reports whether md has another broker that may take
// leadership: registered, not stopping, its log dir online. When every
// broker stops at once there is none, and nothing is waited for.
func (b *Broker) othersCanLead(md *metadata.Image) bool {
	for id, br := range md.Brokers {
		if id != b.nodeID && br.Eligible() {
			return true
		}
	}
	return false
}

// partitionsLedIn counts the partitions md says this broker leads, or
// whose ISR holds it beside others.
func (b *Broker) partitionsLedIn(md *metadata.Image) int {
	n := 0
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if p.Leader == b.nodeID || (len(p.ISR) > 1 && slices.Contains(p.ISR, b.nodeID)) {
				n++
			}
		}
	}
	return n
}
