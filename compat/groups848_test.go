package compat

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KIP-848 consumer groups with a real client: franz-go with
// kgo.ServerSideBalancer() speaks ConsumerGroupHeartbeat, and the broker
// assigns (uniform assignor).

// waitConsumerGroup polls ConsumerGroupDescribe until group is in state
// with members members.
func waitConsumerGroup(t *testing.T, ctx context.Context, adm *kadm.Client, group, state string, members int) kadm.DescribedConsumerGroup {
	t.Helper()
	var last kadm.DescribedConsumerGroup
	for {
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		if err == nil {
			last = ds[group]
			if last.Err == nil && last.State == state && len(last.Members) == members {
				return last
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumer group %s never reached %s with %d members; last %+v (err %v)", group, state, members, last, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestGroups_FranzGo848ThreeMembers runs three server-side-balanced members
// over a 6-partition topic: they split it 2/2/2, receive every record
// exactly once (also records produced after they joined), commit with
// their member epochs and leave; after a broker restart a new group run
// resumes from the commits with no redelivery.
func TestGroups_FranzGo848ThreeMembers(t *testing.T) {
	b := newBroker(t, "group.consumer.heartbeat.interval.ms=250", "group.consumer.min.heartbeat.interval.ms=250")
	ctx := testCtx(t, 90*time.Second)
	adm := newAdmin(t, b)
	prod := newSpreader(t, b)
	topic, group := topicName(t, ""), topicName(t, "group")
	createTopic(t, ctx, adm, topic, 6, nil)
	names := []string{"m0", "m1", "m2"}

	first := produceValues(t, ctx, prod, topic, "before", 300)
	w, got := newGroupWatch(), newTally()
	var ms []*groupMember
	for _, n := range names {
		ms = append(ms, startMember(t, b.bootstrap(), n, group, topic, w, got, kgo.ServerSideBalancer()))
	}
	w.waitBalanced(t, ctx, names, 6)
	d := waitConsumerGroup(t, ctx, adm, group, "Stable", 3)
	if d.AssignorName != "uniform" || d.Epoch != d.AssignmentEpoch {
		t.Errorf("ConsumerGroupDescribe: assignor %q epoch %d assignment epoch %d, want uniform and equal epochs", d.AssignorName, d.Epoch, d.AssignmentEpoch)
	}
	for _, m := range d.Members {
		if m.MemberEpoch != d.Epoch || len(m.Assignment[topic]) != 2 || !slices.Equal(m.SubscribedTopics, []string{topic}) {
			t.Errorf("member %s: epoch %d (group %d), assignment %v, subscribed %v", m.ClientID, m.MemberEpoch, d.Epoch, m.Assignment, m.SubscribedTopics)
		}
	}
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil || listed[group].GroupType != "consumer" || listed[group].State != "Stable" {
		t.Errorf("ListGroups types=consumer: %+v, %v", listed[group], err)
	}

	second := produceValues(t, ctx, prod, topic, "during", 300)
	all := append(slices.Clone(first), second...)
	got.waitDistinct(t, ctx, len(all), "first run")
	waitFetches(t, ctx, ms)
	got.checkExactlyOnce(t, "first run", all)
	for _, m := range ms {
		m.close()
		m.check(t)
	}
	waitConsumerGroup(t, ctx, adm, group, "Empty", 0)
	checkCommittedAtEnd(t, ctx, adm, group, topic)

	// Membership is not persisted, the commits are: after a restart the
	// group resumes from them.
	b.restart(t)
	adm, prod = newAdmin(t, b), newSpreader(t, b)
	third := produceValues(t, ctx, prod, topic, "after", 150)
	w2, got2 := newGroupWatch(), newTally()
	ms = ms[:0]
	for _, n := range names {
		ms = append(ms, startMember(t, b.bootstrap(), n, group, topic, w2, got2, kgo.ServerSideBalancer()))
	}
	got2.waitDistinct(t, ctx, len(third), "after the restart")
	w2.waitBalanced(t, ctx, names, 6)
	waitFetches(t, ctx, ms)
	got2.checkExactlyOnce(t, "after the restart (no redelivery)", third)
	for _, m := range ms {
		m.close()
		m.check(t)
	}
	checkCommittedAtEnd(t, ctx, adm, group, topic)
}
