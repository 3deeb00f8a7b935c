package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeTopicPartitions_AllTopicsPaged: with no topics named, every
// topic in name order, paged by ResponsePartitionLimit; a cursor naming a
// topic that is gone starts at the next name.
func TestDescribeTopicPartitions_AllTopicsPaged(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	for name, n := range map[string]int32{"c": 1, "a": 2, "b": 3} {
		if _, err := adm.CreateTopic(testCtx(t), n, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor) (string, string) {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				got = append(got, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
			}
		}
		next := ""
		if resp.NextCursor != nil {
			next = fmt.Sprintf("%s-%d", resp.NextCursor.Topic, resp.NextCursor.Partition)
		}
		return fmt.Sprint(got), next
	}
	for _, c := range []struct {
		limit            int32
		cursor           *kmsg.DescribeTopicPartitionsRequestCursor
		want, wantCursor string
	}{
		{0, nil, "[a-0 a-1 b-0 b-1 b-2 c-0]", ""},
		{3, nil, "[a-0 a-1 b-0]", "b-1"},
		{3, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b", Partition: 1}, "[b-1 b-2 c-0]", ""},
		{2, nil, "[a-0 a-1]", "b-0"},
		{10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "bb", Partition: 5}, "[c-0]", ""},
	} {
		got, next := describe(c.limit, c.cursor)
		if got != c.want || next != c.wantCursor {
			t.Errorf("limit %d, cursor %v: %s, next %q; want %s, next %q", c.limit, c.cursor, got, next, c.want, c.wantCursor)
		}
	}
}
