package coordinator

import (
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions handles a DescribeTransactions request: each id's
// state, producer id and epoch, timeout, start time (-1 without a
// transaction) and the partitions of its transaction (only while Ongoing or
// Prepare*: completed ones are cleared; groups added by AddOffsetsToTxn are
// not listed, as Gregor has no __consumer_offsets partitions). Unknown ids
// answer TRANSACTIONAL_ID_NOT_FOUND, an empty one INVALID_REQUEST; an error
// answer leaves producer id, epoch and start time 0, as Kafka's does.
func (c *TxnCoordinator) DescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	r := kmsg.NewPtrDescribeTransactionsResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range req.TransactionalIDs {
		d := kmsg.NewDescribeTransactionsResponseTransactionState()
		d.TransactionalID = id
		e := c.txns[id]
		switch {
		case c.closed:
			d.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case id == "":
			d.ErrorCode = kerr.InvalidRequest.Code
		case e == nil:
			d.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			m := e.meta
			d.State = m.state.String()
			d.TimeoutMillis = int32(m.timeout.Milliseconds())
			d.StartTimestamp = m.startMillis()
			d.ProducerID, d.ProducerEpoch = m.producerID, m.epoch
			byTopic := m.partitionsByTopic()
			for _, t := range sortedKeys(byTopic) {
				dt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				dt.Topic, dt.Partitions = t, byTopic[t]
				d.Topics = append(d.Topics, dt)
			}
		}
		r.TransactionStates = append(r.TransactionStates, d)
	}
	return r
}

// ListTransactions handles a ListTransactions request, sorted by
// transactional id. Filters combine with AND and an empty one matches all:
// state names (unknown names are returned in UnknownStateFilters and match
// nothing), producer ids, from v1 a duration (only transactions running for
// longer than DurationFilterMillis, when it is not negative; ids without a
// transaction count as running since the epoch, as in Kafka), and from v2
// a regular expression the whole transactional id must match (an invalid
// one answers INVALID_REGULAR_EXPRESSION).
func (c *TxnCoordinator) ListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	r := kmsg.NewPtrListTransactionsResponse()
	var states []txnState
	for _, name := range req.StateFilters {
		if s, ok := parseTxnState(name); ok {
			states = append(states, s)
		} else {
			r.UnknownStateFilters = append(r.UnknownStateFilters, name)
		}
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			r.ErrorCode = kerr.InvalidRegularExpression.Code
			return r
		}
		pattern = re
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return r
	}
	now := c.cfg.Now().UnixMilli()
	for _, id := range sortedKeys(c.txns) {
		m := c.txns[id].meta
		switch {
		case len(req.StateFilters) > 0 && !slices.Contains(states, m.state):
			continue
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, m.producerID):
			continue
		case duration >= 0 && now-max(m.startMillis(), 0) <= duration:
			continue
		case pattern != nil && !pattern.MatchString(id):
			continue
		}
		lt := kmsg.NewListTransactionsResponseTransactionState()
		lt.TransactionalID, lt.ProducerID, lt.TransactionState = id, m.producerID, m.state.String()
		r.TransactionStates = append(r.TransactionStates, lt)
	}
	return r
}
