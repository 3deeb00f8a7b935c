package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetch_AbortedTransactionsEmptyOnResolutionErrors: a partition refused
// before any read (unknown topic id, unknown partition) answers an empty
// AbortedTransactions array as Kafka does; a read_uncommitted read answers
// null, a read_committed read an array.
func TestFetch_AbortedTransactionsEmptyOnResolutionErrors(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	tp, err := b.createTopic("shapes", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	fetch := func(id [16]byte, partition int32, isolation int8) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 17
		req.ReplicaID, req.MaxBytes, req.IsolationLevel = -1, 1<<20, isolation
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		what      string
		id        [16]byte
		partition int32
		isolation int8
		code      int16
		null      bool
	}{
		{"unknown topic id", [16]byte{1, 2, 3}, 0, 0, kerr.UnknownTopicID.Code, false},
		{"unknown partition", tp.id, 4, 0, kerr.UnknownTopicOrPartition.Code, false},
		{"read_uncommitted read", tp.id, 0, 0, 0, true},
		{"read_committed read", tp.id, 0, 1, 0, false},
	} {
		got := fetch(c.id, c.partition, c.isolation)
		if got.ErrorCode != c.code || (got.AbortedTransactions == nil) != c.null || len(got.AbortedTransactions) != 0 {
			t.Errorf("%s: %v, aborted %v (null %v); want %v, null %v", c.what, kerr.ErrorForCode(got.ErrorCode), got.AbortedTransactions, got.AbortedTransactions == nil, kerr.ErrorForCode(c.code), c.null)
		}
	}
}
