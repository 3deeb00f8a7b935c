package broker

// Kafka's LogValidator checks on a produced batch's records, which the
// Produce path (produce_replicas.go) applies before an append.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkRecords applies Kafka's LogValidator checks on the records of a
// produced batch: on a compacted topic every record needs a key
// (INVALID_RECORD), and with CreateTime a timestamp (other than -1) must lie
// within message.timestamp.before/after.max.ms of now (INVALID_TIMESTAMP,
// which wins when both occur). Like Kafka it lists every offending record
// (batch index and message) in recordErrors. Records are walked only on a
// compacted topic or when the batch header's timestamps are out of range,
// so an ordinary produce decompresses nothing.
func checkRecords(settings produceSettings, p *partition, records []byte, hdr storage.BatchHeader, now int64) (code int16, msg string, recordErrors []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	lo, hi := now-settings.tsBeforeMaxMs, now+settings.tsAfterMaxMs
	if settings.tsBeforeMaxMs > now {
		lo = math.MinInt64
	}
	if settings.tsAfterMaxMs > math.MaxInt64-now {
		hi = math.MaxInt64
	}
	checkTimes := !settings.logAppendTime
	badTime := func(ts int64) bool { return checkTimes && ts != -1 && (ts < lo || ts > hi) }
	headerBad := badTime(hdr.MaxTimestamp) || hdr.BaseTimestamp >= 0 && badTime(hdr.BaseTimestamp)
	if !settings.compacted && !headerBad && settings.schemas == nil {
		return 0, "", nil
	}
	tp := p.topic.name + "-" + strconv.Itoa(int(p.index))
	timeErrors := false
	err := storage.WalkBatchRecords(records, decompress, func(r storage.RecordCheck) {
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset = r.Index
		switch {
		case settings.compacted && r.NullKey:
			e.ErrorMessage = kmsg.StringPtr("Compacted topic cannot accept message without key in topic partition " + tp + ".")
		case badTime(r.Timestamp):
			timeErrors = true
			e.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]", r.Timestamp, r.Index, lo, hi))
		case settings.schemas != nil:
			msg := settings.schemas.check(p.topic.name, r)
			if msg == "" {
				return
			}
			e.ErrorMessage = kmsg.StringPtr(msg)
		default:
			return
		}
		recordErrors = append(recordErrors, e)
	})
	switch {
	case err != nil:
		return kerr.InvalidRecord.Code, err.Error(), nil
	case timeErrors:
		return kerr.InvalidTimestamp.Code, "One or more records have been rejected due to invalid timestamp", recordErrors
	case len(recordErrors) > 0:
		return kerr.InvalidRecord.Code, fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: %s", len(recordErrors), recordErrorsText(recordErrors)), recordErrors
	case headerBad:
		// The header's timestamps are out of range but no record's is:
		// refuse the inconsistent batch rather than store it.
		return kerr.InvalidTimestamp.Code, fmt.Sprintf("The batch's timestamps [%d, %d] are outside [%d, %d]", hdr.BaseTimestamp, hdr.MaxTimestamp, lo, hi), nil
	}
	return 0, "", nil
}

// recordErrorsText lists up to three record errors, as Kafka's message does.
func recordErrorsText(errs []kmsg.ProduceResponseTopicPartitionErrorRecord) string {
	var parts []string
	for _, e := range errs[:min(len(errs), 3)] {
		parts = append(parts, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
