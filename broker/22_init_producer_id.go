package broker

// InitProducerId: v0-5
//
// v1 is v0, v2 flexible, v3 adds the producer id and epoch of a producer
// that wants to keep its identity (KIP-360), v4 answers PRODUCER_FENCED
// where older versions get INVALID_PRODUCER_EPOCH, v5 is v4 (KIP-890
// clients).
//
// Idempotent producers (no transactional id) get a new producer id with
// epoch 0; ids come from durably reserved blocks, so none is handed out
// twice, even across a crash. A client that passes its current id and epoch
// (v3+, KIP-360, to recover from a fatal sequence error) also gets a fresh
// id, as Kafka does for non-transactional producers. Requests with a
// transactional id go to the transaction coordinator (epoch bumps, fencing,
// aborting the previous epoch's transaction).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.InitProducerID, 0, 5, (*Broker).handleInitProducerID) }

func (b *Broker) handleInitProducerID(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if code := b.initProducerIDAuth(r, req); code != 0 {
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if code := b.txnCoordinatorCode(*req.TransactionalID); code != 0 {
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
			return resp, nil
		}
		return b.txns.InitProducerID(r.ctx, req), nil
	}
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id, err := b.pids.allocate()
	if err != nil {
		b.log.Error("allocate producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
