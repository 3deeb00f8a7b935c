package broker

// Produce: v3-12 served, v0-12 advertised
//
// Kafka 4 removed v0-v2 but still advertises them because librdkafka reads
// a missing v0 as "no produce at all" (KAFKA-18659); using them closes the
// connection. Each partition's records must be exactly one RecordBatch v2
// (INVALID_RECORD otherwise) no larger than max.message.bytes
// (MESSAGE_TOO_LARGE), with a valid CRC (CORRUPT_MESSAGE). The log assigns
// offsets and applies the idempotent producer's sequence rules
// (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH; a retried
// duplicate answers its original offset). acks must be -1, 0 or 1
// (INVALID_REQUIRED_ACKS); acks=0 gets no response. With
// message.timestamp.type=LogAppendTime the broker stamps the batch;
// CreateTime timestamps outside message.timestamp.before/after.max.ms are
// INVALID_TIMESTAMP and keyless records on a compacted topic INVALID_RECORD,
// each offending record listed in ErrorRecords (batch index, message). A transactional batch in a request without a
// transactional id fails the whole request with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as in Kafka. Transactional batches
// must belong to the producer's ongoing transaction (INVALID_TXN_STATE,
// TRANSACTION_ABORTABLE from v11); from v12 (KIP-890 part 2) a produce adds
// its partition to the transaction implicitly. v13 (topic ids) is not served yet.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.Produce, 3, 12, (*Broker).handleProduce)
	advertiseFrom(kmsg.Produce, 0)
}

func (b *Broker) handleProduce(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ProduceRequest)
	resp := r.produceResponse(req)
	if req.Acks == 0 {
		r.noResponse = true
	}
	var waits []replicaWait
	authCode := b.produceAuth(r, req)
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = produceResponsePartitions(resp, ti)
		denied := authCode(rt.Topic)
		t := b.lookupTopic(rt.Topic)
		var roCode int16
		var roMsg string
		if t != nil && denied == 0 {
			roCode, roMsg = b.produceReadOnly(rt.Topic)
		}
		var settings produceSettings
		var parts []*partition
		if t != nil {
			settings, parts = b.produceSnapshot(t)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var code int16
			var msg string
			switch {
			case denied != 0:
				code = denied
			case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
				code = kerr.InvalidRequiredAcks.Code
			case t == nil || rp.Partition < 0 || int(rp.Partition) >= len(parts):
				code = kerr.UnknownTopicOrPartition.Code
			case roCode != 0:
				code, msg = roCode, roMsg
			default:
				var w *replicaWait
				code, msg, w = b.producePartition(req, settings, parts[rp.Partition], rp.Records, &sp)
				if w != nil {
					w.ti, w.pi = ti, len(st.Partitions)
					waits = append(waits, *w)
				}
			}
			sp.ErrorCode = code
			b.noteNotLeader(code)
			if code != 0 && msg != "" {
				sp.ErrorMessage = kmsg.StringPtr(msg)
			}
			if req.Version >= 10 && t != nil {
				b.produceLeaderHint(resp, &sp, partitionAt(parts, rp.Partition))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
		r.wait = func() { b.awaitReplicas(r.ctx, resp, waits, timeout) }
	}
	if req.Acks == 0 {
		// With no response to carry an error, Kafka closes the connection
		// so that the client refreshes its metadata.
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					return nil, fmt.Errorf("acks=0 produce to %s[%d] failed: %s", st.Topic, sp.Partition, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
		}
	}
	return resp, nil
}

func (b *Broker) producePartition(req *kmsg.ProduceRequest, settings produceSettings, p *partition, records []byte, sp *kmsg.ProduceResponseTopicPartition) (int16, string, *replicaWait) {
	ldr, code, msg := b.produceLeadership(p)
	if code != 0 {
		return code, msg, nil
	}
	hdr, err := storage.ParseBatchHeader(records)
	if err != nil {
		return kerr.CorruptMessage.Code, err.Error(), nil
	}
	if hdr.Magic != 2 {
		return kerr.InvalidRecord.Code, "Produce requests with version 3+ may only contain record batches with magic version 2", nil
	}
	if hdr.Size() != int64(len(records)) {
		if hdr.Size() < int64(len(records)) {
			return kerr.InvalidRecord.Code, "Produce requests with version 3+ must contain exactly one record batch", nil
		}
		return kerr.CorruptMessage.Code, "record batch is truncated", nil
	}
	if maxBytes := settings.maxMessageBytes; int64(len(records)) > maxBytes {
		return kerr.MessageTooLarge.Code, "The record batch size " + strconv.Itoa(len(records)) + " exceeds max.message.bytes " + strconv.FormatInt(maxBytes, 10), nil
	}
	if hdr.Control() {
		return kerr.InvalidRecord.Code, "clients may not produce control batches", nil
	}
	// Errors found in the records or the producer's state carry the
	// partition's log start offset, as Kafka's ReplicaManager answers them
	// (its processFailedRecord); request-level ones above leave it -1.
	failedRecord := func(code int16, msg string) (int16, string, *replicaWait) {
		sp.LogStartOffset = p.log.LogStartOffset()
		return code, msg, nil
	}
	if hdr.Transactional() {
		if req.TransactionID == nil { // produceAuth refused the request already
			return kerr.TransactionalIDAuthorizationFailed.Code, "a transactional batch needs the request's transactional id", nil
		}
		code := b.checkTxnProduce(*req.TransactionID, hdr.ProducerID, hdr.ProducerEpoch, p, req.Version >= 12)
		if code, msg := coordinator.ProduceTxnError(code, req.Version); code != 0 {
			return code, msg, nil
		}
	}
	if code, msg := minInsync(ldr, req.Acks, settings.minInsyncReplicas); code != 0 {
		return code, msg, nil
	}
	opts := storage.AppendOptions{LeaderEpoch: p.epoch.Load(), LogAppendTime: -1}
	now := b.cfg.Now().UnixMilli()
	if settings.logAppendTime {
		opts.LogAppendTime = now
	}
	if code, msg, recordErrors := checkRecords(settings, p, records, hdr, now); code != 0 {
		sp.ErrorRecords = recordErrors
		return failedRecord(code, msg)
	}
	if f := b.logDir.failed.Load(); f != nil {
		return kerr.KafkaStorageError.Code, "the log dir is offline since " + f.since.UTC().Format(time.RFC3339) + ": " + f.err.Error(), nil
	}
	res, err := p.log.Append(records, opts)
	if err != nil {
		code := appendErrorCode(err)
		switch code {
		case kerr.KafkaStorageError.Code:
			b.noteWriteError(err)
		case kerr.UnknownServerError.Code:
			b.log.Error("append failed", "topic", p.topic.name, "partition", p.index, "err", err)
		case kerr.OutOfOrderSequenceNumber.Code, kerr.InvalidProducerEpoch.Code, kerr.InvalidRecord.Code:
			return failedRecord(code, err.Error())
		}
		return code, err.Error(), nil
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	if ldr != nil {
		ldr.MaybeAdvanceHighWatermark()
		if req.Acks == -1 {
			// A retried duplicate, too, is answered only once committed.
			return 0, "", &replicaWait{p: p, ldr: ldr, target: res.LastOffset + 1, minISR: settings.minInsyncReplicas}
		}
	}
	return 0, "", nil
}

// hasTransactionalRecords reports whether a partition's batch of req is
// transactional. Kafka then requires the request's transactional id (and
// WRITE on it) and answers every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// without one. Only each partition's first batch is looked at: a second one
// is INVALID_RECORD anyway.
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if h, err := storage.ParseBatchHeader(rp.Records); err == nil && h.Magic == 2 && h.Transactional() {
				return true
			}
		}
	}
	return false
}

// appendErrorCode maps a storage error to the Kafka error a producer sees;
// a Kafka error (a leadership or min.insync.replicas check before the
// append) is its own code.
func appendErrorCode(err error) int16 {
	var se *storage.StorageError
	var ke *kerr.Error
	switch {
	case errors.Is(err, storage.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, storage.ErrInvalidRecord), errors.Is(err, storage.ErrUnsupportedMagic):
		return kerr.InvalidRecord.Code
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, storage.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, storage.ErrLogClosed):
		return kerr.UnknownTopicOrPartition.Code
	case errors.As(err, &se):
		return kerr.KafkaStorageError.Code
	case errors.As(err, &ke):
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
