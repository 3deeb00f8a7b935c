package broker

// The transaction APIs are answered by package coordinator's
// TxnCoordinator; this file registers their versions, with the notes on
// what each version changes, and passes the decoded requests through.
//
// InitProducerId with a transactional id (22_init_producer_id.go) and the
// transactional checks of Produce (00_produce.go) also go to it. The
// coordinator ends a transaction by calling writeMarkers, which appends a
// COMMIT or ABORT control batch to every partition of the transaction.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	// AddPartitionsToTxn: v0-5. v1 is v0, v2 answers PRODUCER_FENCED where
	// v0-1 get INVALID_PRODUCER_EPOCH, v3 flexible; v4 batches transactions
	// and adds VerifyOnly (sent by partition leaders, KIP-890 part 1), v5
	// TRANSACTION_ABORTABLE for verification failures.
	register(kmsg.AddPartitionsToTxn, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.txns.AddPartitionsToTxn(r.ctx, r.msg.(*kmsg.AddPartitionsToTxnRequest)), nil
	})
	// AddOffsetsToTxn: v0-4. v2 PRODUCER_FENCED as above, v3 flexible, v4
	// TRANSACTION_ABORTABLE.
	register(kmsg.AddOffsetsToTxn, 0, 4, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.txns.AddOffsetsToTxn(r.msg.(*kmsg.AddOffsetsToTxnRequest)), nil
	})
	// EndTxn: v0-5. v1 is v0, v2 answers PRODUCER_FENCED where v0-1 get
	// INVALID_PRODUCER_EPOCH, v3 flexible, v4 TRANSACTION_ABORTABLE (never
	// answered by EndTxn), v5 transaction version 2 (KIP-890 part 2): every
	// EndTxn bumps the epoch and the response carries the producer id and
	// epoch to use next.
	register(kmsg.EndTxn, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.txns.EndTxn(r.ctx, r.msg.(*kmsg.EndTxnRequest)), nil
	})
	// TxnOffsetCommit: v0-5. v2 leader epochs, v3 flexible with generation,
	// member id and group.instance.id, v4 TRANSACTION_ABORTABLE, v5 adds the
	// group to the transaction itself (transaction version 2, so
	// AddOffsetsToTxn is not needed).
	register(kmsg.TxnOffsetCommit, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		req := r.msg.(*kmsg.TxnOffsetCommitRequest)
		if b.txns.TxnError(req.TransactionalID) != 0 {
			// The group is coordinated here, its transactional id
			// elsewhere: the group stores the offsets as pending, as
			// Kafka's group coordinator does.
			return b.groups.TxnOffsetCommit(req), nil
		}
		return b.txns.TxnOffsetCommit(req), nil
	})
	// DescribeTransactions: v0.
	register(kmsg.DescribeTransactions, 0, 0, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.txns.DescribeTransactions(r.msg.(*kmsg.DescribeTransactionsRequest)), nil
	})
	// ListTransactions: v0-2. v1 duration filter, v2 transactional id
	// regular expression.
	register(kmsg.ListTransactions, 0, 2, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.txns.ListTransactions(r.msg.(*kmsg.ListTransactionsRequest)), nil
	})
	coordinated(kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit, kmsg.DescribeTransactions)
}

// openTxns opens the transaction coordinator: its state is
// __transaction_state (txn_topic.go), materialised in
// <data-dir>/__meta/txns.db. Groups and topics must be open: it may write
// markers while it opens (transactions a crash left half-done).
func (b *Broker) openTxns() (*coordinator.TxnCoordinator, error) {
	ms := func(name string) time.Duration { return time.Duration(b.cfg.int64Prop(name)) * time.Millisecond }
	return coordinator.OpenTxn(coordinator.TxnConfig{
		Dir:                   filepath.Join(b.cfg.DataDir, metaDirName),
		Now:                   b.cfg.Now,
		MaxTimeout:            ms("transaction.max.timeout.ms"),
		AbortTimedOutInterval: ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		IDExpiration:          ms("transactional.id.expiration.ms"),
		RemoveExpiredInterval: ms("transaction.remove.expired.transaction.cleanup.interval.ms"),
		AllocateProducerID:    b.pids.allocate,
		WriteMarkers:          b.writeMarkers,
		Groups:                b.groups,
		CompleteOffsets:       b.completeTxnOffsets,
		TopicPartitions:       b.topicPartitionCount,
		Log:                   groupLog{b: b, topic: txnStateTopicName, minISR: b.txnLog.minISR},
		LogPartitions:         int32(b.cfg.int64Prop("transaction.state.log.num.partitions")),
		LogReplicated:         b.cfg.clusterConfigured(),
		Logger:                b.log.With("component", "txns"),
	})
}

// writeMarkers appends a transaction marker to each listed partition.
// Partitions of deleted topics are skipped: there is nothing to complete.
// In a cluster, partitions led by other brokers get theirs through a
// WriteTxnMarkers request to their leader (27_write_txn_markers.go).
func (b *Broker) writeMarkers(ctx context.Context, txnID string, producerID int64, epoch int16, commit, bumped bool, partitions map[string][]int32) error {
	coordEpoch, err := b.txnCoordinatorEpoch(txnID)
	if err != nil {
		return err
	}
	var errs []error
	var waits []replicaWait
	remote := map[int32]map[string][]int32{}
	for name, ps := range partitions {
		t := b.lookupTopic(name)
		if t == nil {
			continue
		}
		settings, parts := b.produceSnapshot(t)
		for _, p := range ps {
			if p < 0 || int(p) >= len(parts) {
				continue
			}
			part := parts[p]
			if b.cluster != nil && b.leadership(part) != 0 {
				leader := int32(-1)
				if mp := part.meta.Load(); mp != nil {
					leader = mp.Leader
				}
				if remote[leader] == nil {
					remote[leader] = map[string][]int32{}
				}
				remote[leader][name] = append(remote[leader][name], p)
				continue
			}
			w, err := b.appendMarker(part, settings.minInsyncReplicas, producerID, epoch, commit, coordEpoch, bumped)
			if err != nil {
				errs = append(errs, fmt.Errorf("marker for %s[%d]: %w", name, p, err))
			} else if w != nil {
				waits = append(waits, *w)
			}
		}
	}
	deadline := time.Now().Add(markerCommitTimeout)
	for _, w := range waits {
		if code := b.awaitReplica(ctx, w, deadline); code != 0 {
			errs = append(errs, fmt.Errorf("marker for %s[%d]: %w", w.p.topic.name, w.p.index, kerr.ErrorForCode(code)))
		}
	}
	for leader, ps := range remote {
		if err := b.sendMarkers(ctx, leader, producerID, epoch, commit, coordEpoch, bumped, ps); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// txnCoordinatorEpoch is this broker's coordinator epoch for txnID: the
// leader epoch of txnID's partition of __transaction_state (0 on a single
// node), which stamps its markers, so that a partition leader refuses a
// late marker of a coordinator since replaced (Kafka's coordinator epoch).
// A broker that no longer leads that partition, or is fenced, refuses to
// write markers at all: NOT_COORDINATOR.
func (b *Broker) txnCoordinatorEpoch(txnID string) (int32, error) {
	if b.cluster == nil {
		return 0, nil
	}
	if t := b.txnLog.ensure(); t != nil {
		if p := b.keyPartition(t, txnID); p != nil {
			if leads, epoch := b.leadsGroupPartition(p); leads {
				return epoch, nil
			}
		}
	}
	return 0, fmt.Errorf("transaction markers for %q: %w", txnID, kerr.NotCoordinator)
}

// appendMarker appends one COMMIT or ABORT marker to a partition this
// broker leads; bumped as storage's AppendBumpedMarker. In a cluster it
// returns the wait for the marker to reach the ISR (nil on a single node):
// Kafka appends markers with acks=all, and so must Gregor, for a
// coordinator that counts a marker written once only the leader has it
// completes the transaction, and if that leader then fails, the next one
// has the transaction's records without their marker, so that they share
// the fate of the producer's next transaction. As for an acks=all produce,
// fewer in-sync replicas than minISR is NOT_ENOUGH_REPLICAS before the
// append.
func (b *Broker) appendMarker(part *partition, minISR int64, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, bumped bool) (*replicaWait, error) {
	ldr := part.leader.Load()
	if b.cluster != nil {
		if ldr == nil {
			return nil, kerr.NotLeaderForPartition
		}
		if code, _ := minInsync(ldr, -1, minISR); code != 0 {
			return nil, kerr.ErrorForCode(code)
		}
	}
	appendMarker := part.log.AppendMarker
	if bumped {
		appendMarker = part.log.AppendBumpedMarker
	}
	offset, err := appendMarker(producerID, epoch, commit, coordinatorEpoch, part.epoch.Load())
	if errors.Is(err, storage.ErrLogClosed) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ldr == nil {
		return nil, nil
	}
	ldr.MaybeAdvanceHighWatermark()
	return &replicaWait{p: part, ldr: ldr, target: offset + 1, minISR: minISR}, nil
}

func (b *Broker) topicPartitionCount(name string) (int32, bool) {
	t := b.lookupTopic(name)
	if t == nil {
		return 0, false
	}
	return int32(len(b.partitionsOf(t))), true
}
