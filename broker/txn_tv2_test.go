package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With transaction.version finalized at 2 franz-go bumps the producer
// epoch at every EndTxn (KIP-890 part 2) and starts each transaction's
// batches at sequence 0 again. Three committed transactions of the same
// shape (two records, one batch, one partition) are all read back with
// read_committed: the second's batch is not taken for a retry of the
// first's, whose sequence numbers it repeats one epoch up.
func TestTransactionVersion2_SameShapeTransactionsAllCommitted(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	ctx := testCtx(t)
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "transaction.version", 2, 1
	uf.FeatureUpdates = append(uf.FeatureUpdates, fu)
	resp, err := uf.RequestWith(ctx, newClient(t, addr))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("finalize transaction.version 2: %v %+v", err, resp)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("finalize transaction.version 2: %+v", r)
		}
	}
	const topic = "tv2"
	txn := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.TransactionalID("tv2-txn"), kgo.ProducerLinger(0))
	var want []string
	var epochs []int16
	for i := range 3 {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		recs := []*kgo.Record{kgo.StringRecord(fmt.Sprintf("t%d-a", i)), kgo.StringRecord(fmt.Sprintf("t%d-b", i))}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		_, epoch, err := txn.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, epoch)
		want = append(want, string(recs[0].Value), string(recs[1].Value))
	}
	if epochs[0] == epochs[1] || epochs[1] == epochs[2] {
		t.Fatalf("epochs after each EndTxn %v: the client did not bump (not transaction version 2)", epochs)
	}
	cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %v, want %v: %v", got, want, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed %v, want %v", got, want)
	}
}
