package replication

import (
	"fmt"
	"testing"
	"time"
)

// ReadReplicas offers only ISR followers whose log holds the fetch offset:
// not one out of the ISR, not one whose log end offset is below it, not
// one whose log start offset is above it, and none not yet heard from.
func TestLeader_ReadReplicasAreInSyncAndHoldTheOffset(t *testing.T) {
	now := time.Unix(1000, 0)
	log := &memLog{leo: 100}
	l := NewLeader(1, log, State{LeaderEpoch: 2, PartitionEpoch: 1, Replicas: []int32{1, 2, 3, 4}, ISR: []int32{1, 2, 3}}, 100, now)
	if got := l.ReadReplicas(0); len(got) != 0 {
		t.Fatalf("followers not yet heard from offered: %v", got)
	}
	l.FollowerFetched(2, 100, now)
	l.FollowerLogStartOffset(2, 0)
	l.FollowerFetched(3, 60, now.Add(time.Second))
	l.FollowerLogStartOffset(3, 40)
	l.FollowerFetched(4, 100, now) // not in the ISR
	l.FollowerLogStartOffset(4, 0)
	for _, tc := range []struct {
		offset int64
		want   string
	}{
		{0, "[2]"},
		{39, "[2]"},
		{40, "[2 3]"},
		{60, "[2 3]"},
		{61, "[2]"},
		{100, "[2]"},
		{101, "[]"},
	} {
		var ids []int32
		for _, r := range l.ReadReplicas(tc.offset) {
			ids = append(ids, r.Replica)
		}
		if got := fmt.Sprint(ids); got != tc.want && !(tc.want == "[]" && ids == nil) {
			t.Errorf("ReadReplicas(%d) = %s, want %s", tc.offset, got, tc.want)
		}
	}
	rs := l.ReadReplicas(50)
	if len(rs) != 2 || rs[0].LogEndOffset != 100 || rs[1].LogEndOffset != 60 {
		t.Fatalf("ReadReplicas(50) = %+v", rs)
	}
	// A follower whose Fetch had no log start offset (-1) holds any
	// offset from its log end offset down.
	l.FollowerLogStartOffset(3, -1)
	if rs := l.ReadReplicas(0); len(rs) != 2 {
		t.Fatalf("ReadReplicas(0) with an unknown log start offset = %+v", rs)
	}
}
