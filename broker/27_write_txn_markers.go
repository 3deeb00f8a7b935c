package broker

// WriteTxnMarkers: v0-2 (inter-broker)
//
// In a cluster the transaction coordinator asks each partition's leader to
// append the COMMIT or ABORT marker that ends a transaction there, as
// Kafka's coordinator does. A partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER: the coordinator retries once the metadata has
// moved on. The answer comes once the marker is on every in-sync replica,
// as Kafka appends markers with acks=all.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// WriteTxnMarkers v0-2. v2 carries the transaction version: a marker of
// version 2 has an epoch bumped past its transaction's batches, and is
// refused at the producer's epoch while a transaction is open
// (storage.Log.AppendBumpedMarker); Gregor's coordinator sends version 2
// for every bumped marker, a fenced producer's too.
func init() { register(kmsg.WriteTxnMarkers, 0, 2, (*Broker).handleWriteTxnMarkers) }

func (b *Broker) handleWriteTxnMarkers(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type markerWait struct {
		mi, ti, pi int // where its answer is in resp
		w          replicaWait
	}
	var waits []markerWait
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for ti, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			var settings produceSettings
			var parts []*partition
			if t := b.lookupTopic(mt.Topic); t != nil {
				settings, parts = b.produceSnapshot(t)
			}
			for _, pi := range mt.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = pi
				p := partitionAt(parts, pi)
				switch {
				case p == nil:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case mt.Topic == offsetsTopicName:
					rp.ErrorCode = b.groupOffsetsMarker(pi, m.ProducerID, m.Committed)
				case b.writeLeadership(p) != 0:
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				default:
					w, err := b.appendMarker(p, settings.minInsyncReplicas, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion >= 2)
					if err != nil {
						b.log.Error("write transaction marker", "topic", mt.Topic, "partition", pi, "err", err)
						rp.ErrorCode = appendErrorCode(err)
					} else if w != nil {
						waits = append(waits, markerWait{mi: mi, ti: ti, pi: len(rt.Partitions), w: *w})
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if len(waits) > 0 {
		// The answer waits until every marker is on the ISR, as an
		// acks=all produce's does (appendMarker says why).
		r.wait = func() {
			deadline := time.Now().Add(markerCommitTimeout)
			for _, mw := range waits {
				if code := b.awaitReplica(r.ctx, mw.w, deadline); code != 0 {
					resp.Markers[mw.mi].Topics[mw.ti].Partitions[mw.pi].ErrorCode = code
				}
			}
		}
	}
	return resp, nil
}

// markerCommitTimeout bounds the wait for a marker to reach the ISR: an
// answer REQUEST_TIMED_OUT then has the coordinator append it again (a
// marker for a transaction already ended is harmless), well before the 10 s
// the coordinator's peer client waits for an answer (franz-go's request
// timeout overhead; WriteTxnMarkers has no timeout field to raise it).
const markerCommitTimeout = 5 * time.Second

// sendMarkers asks leader to append the markers of one transaction.
func (b *Broker) sendMarkers(ctx context.Context, leader int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, bumped bool, partitions map[string][]int32) error {
	if leader < 0 {
		return fmt.Errorf("partitions %v have no leader", partitions)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = producerID, epoch, commit, coordinatorEpoch
	m.TransactionVersion = 1
	if bumped {
		m.TransactionVersion = 2
	}
	for name, ps := range partitions {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = name, ps
		m.Topics = append(m.Topics, t)
	}
	req.Markers = append(req.Markers, m)
	kresp, err := b.peerRequest(ctx, leader, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, rm := range kresp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 && rp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					errs = append(errs, fmt.Errorf("marker for %s[%d] on broker %d: %w", rt.Topic, rp.Partition, leader, kerr.ErrorForCode(rp.ErrorCode)))
				}
			}
		}
	}
	return errors.Join(errs...)
}
