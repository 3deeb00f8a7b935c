package broker

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterGroupConfig sets (value non-nil) or deletes one config of a group
// and returns the resource's error code.
func alterGroupConfig(t *testing.T, cl *kgo.Client, group, name string, value *string) int16 {
	t.Helper()
	code, _ := alterGroupConfigMsg(t, cl, group, name, value)
	return code
}

// alterGroupConfigMsg is alterGroupConfig with the resource's error
// message.
func alterGroupConfigMsg(t *testing.T, cl *kgo.Client, group, name string, value *string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, value
	if value == nil {
		c.Op = kmsg.IncrementalAlterConfigOpDelete
	}
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	if r.ErrorMessage == nil {
		return r.ErrorCode, ""
	}
	return r.ErrorCode, *r.ErrorMessage
}

// describeGroupConfig returns a group config's value and source as one
// broker describes it, "value/source".
func describeGroupConfig(t *testing.T, cl *kgo.Client, group, name string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe %s of %s: %+v", name, group, resp.Resources)
	}
	c := resp.Resources[0].Configs[0]
	return fmt.Sprintf("%s/%s", *c.Value, c.Source)
}

// A group config set on a single node is in __meta/group-configs.json and
// survives a restart; a deletion does too.
func TestGroupConfigs_SurviveRestart(t *testing.T) {
	dir := t.TempDir()
	b, addr := startBroker(t, dir, nil)
	cl := newClient(t, addr)
	if code := alterGroupConfig(t, cl, "sg/1", "share.auto.offset.reset", kmsg.StringPtr("earliest")); code != 0 {
		t.Fatalf("set: %d", code)
	}
	if code := alterGroupConfig(t, cl, "sg2", "share.record.lock.duration.ms", kmsg.StringPtr("15000")); code != 0 {
		t.Fatalf("set: %d", code)
	}
	if code := alterGroupConfig(t, cl, "sg2", "share.record.lock.duration.ms", nil); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	_, addr = startBroker(t, dir, nil)
	cl = newClient(t, addr)
	if got := describeGroupConfig(t, cl, "sg/1", "share.auto.offset.reset"); got != "earliest/GROUP_CONFIG" {
		t.Errorf("sg/1 after restart: %s", got)
	}
	if got := describeGroupConfig(t, cl, "sg2", "share.record.lock.duration.ms"); got != "30000/DEFAULT_CONFIG" {
		t.Errorf("sg2 after restart: %s", got)
	}
}

// In a two-broker cluster a group config set through one broker is in
// etcd: the other describes it and uses it for its share partitions, and
// a deletion through the other reaches the first.
func TestCluster_GroupConfigsInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs := startTwoBrokerCluster(t)
	c1, c2 := newClient(t, addrs[0]), newClient(t, addrs[1])
	if code := alterGroupConfig(t, c1, "sg", "share.auto.offset.reset", kmsg.StringPtr("earliest")); code != 0 {
		t.Fatalf("set: %d", code)
	}
	if code := alterGroupConfig(t, c1, "sg", "share.record.lock.duration.ms", kmsg.StringPtr("20000")); code != 0 {
		t.Fatalf("set: %d", code)
	}
	if got := describeGroupConfig(t, c1, "sg", "share.auto.offset.reset"); got != "earliest/GROUP_CONFIG" {
		t.Fatalf("broker 1 right after its alter: %s", got)
	}
	waitFor(t, 10*time.Second, "broker 2 to see the group configs", func() bool {
		return describeGroupConfig(t, c2, "sg", "share.auto.offset.reset") == "earliest/GROUP_CONFIG" &&
			describeGroupConfig(t, c2, "sg", "share.record.lock.duration.ms") == "20000/GROUP_CONFIG"
	})
	if d := brokers[1].shares.PartitionConfig("sg").LockDuration; d != 20*time.Second {
		t.Fatalf("broker 2's share-partition lock duration: %v", d)
	}
	if code := alterGroupConfig(t, c2, "sg", "share.auto.offset.reset", nil); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	waitFor(t, 10*time.Second, "broker 1 to see the deletion", func() bool {
		return describeGroupConfig(t, c1, "sg", "share.auto.offset.reset") == "latest/DEFAULT_CONFIG" &&
			describeGroupConfig(t, c1, "sg", "share.record.lock.duration.ms") == "20000/GROUP_CONFIG"
	})
}

// In a two-broker cluster the share group's coordinator sets and reads the
// SPSO on the partition leaders, whichever broker they are, and deleting
// the group removes its state on both brokers and its configs from etcd.
func TestCluster_ShareOffsetsOnLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs := startTwoBrokerCluster(t)
	ctx := testCtx(t)
	cl := newClient(t, addrs[0], kgo.SeedBrokers(addrs...))
	adm := kadm.NewClient(cl)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "s", -1, -1
	for p := range int32(2) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{p + 1}
		ctt.ReplicaAssignment = append(ctt.ReplicaAssignment, a)
	}
	ct.Topics = append(ct.Topics, ctt)
	if cr, err := ct.RequestWith(ctx, cl); err != nil || cr.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, cr)
	}
	// The broker kadm asks may not have applied the new topic's metadata
	// yet (it answers UNKNOWN_TOPIC_OR_PARTITION, with a zero topic id,
	// until it has): wait for the id, as a client retries.
	var id [16]byte
	waitFor(t, 10*time.Second, "the topic's id in Metadata", func() bool {
		td, err := adm.ListTopics(ctx, "s")
		if err != nil || td["s"].Err != nil {
			return false
		}
		id = td["s"].ID
		return id != [16]byte{}
	})
	if code := alterGroupConfig(t, cl, "sg", "share.auto.offset.reset", kmsg.StringPtr("earliest")); code != 0 {
		t.Fatalf("set config: %d", code)
	}

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "s"
	for p, off := range []int64{3, 7} {
		ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		ap.Partition, ap.StartOffset = int32(p), off
		at.Partitions = append(at.Partitions, ap)
	}
	alter.Topics = append(alter.Topics, at)
	// The group coordinator, and the share coordinators the leaders
	// write to, may still be loading or moving their partitions: a client
	// retries those answers.
	var ar *kmsg.AlterShareGroupOffsetsResponse
	var err error
	retriable := func(code int16) bool {
		return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
	}
	var attempts []string // every answer, for the failure message
	waitFor(t, 20*time.Second, "the coordinators to load", func() bool {
		ar, err = alter.RequestWith(ctx, cl)
		attempts = append(attempts, fmt.Sprintf("%v %+v", err, ar))
		if err != nil || retriable(ar.ErrorCode) || len(ar.Topics) != 1 {
			return err != nil
		}
		for _, p := range ar.Topics[0].Partitions {
			if retriable(p.ErrorCode) {
				return false
			}
		}
		return true
	})
	if err != nil || ar.ErrorCode != 0 || len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != 2 ||
		ar.Topics[0].Partitions[0].ErrorCode != 0 || ar.Topics[0].Partitions[1].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, ar)
	}
	// The state is on each partition's leader: partition 0 on broker 1,
	// partition 1 on broker 2.
	for i, want := range []int64{3, 7} {
		sp := brokers[i].shares.States("sg")[topicIDPartition{TopicID: uuid(id), Partition: int32(i)}]
		if sp == nil || sp.StartOffset() != want {
			t.Fatalf("broker %d's state of partition %d: %v; broker 1 holds %v, broker 2 %v; the alter's answers:\n%s",
				i+1, i, sp, brokers[0].shares.States("sg"), brokers[1].shares.States("sg"), strings.Join(attempts, "\n"))
		}
	}

	describe := func(all bool) string {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = "sg"
		if !all {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = "s", []int32{0, 1}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("describe: %v %+v", err, resp)
		}
		var out string
		for _, rt := range resp.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				out += fmt.Sprintf("%s-%d@%d/%d ", rt.Topic, rp.Partition, rp.StartOffset, rp.ErrorCode)
			}
		}
		return out
	}
	if got := describe(false); got != "s-0@3/0 s-1@7/0 " {
		t.Fatalf("describe s: %s", got)
	}
	if got := describe(true); got != "s-0@3/0 s-1@7/0 " {
		t.Fatalf("describe all: %s", got)
	}

	dr, err := adm.DeleteGroup(ctx, "sg")
	if err != nil || dr.Err != nil {
		t.Fatalf("delete group: %v %v", err, dr.Err)
	}
	waitFor(t, 10*time.Second, "the group's state and configs to go on both brokers", func() bool {
		for _, b := range brokers {
			if len(b.shares.States("sg")) != 0 || b.groupConfigs.of("sg") != nil {
				return false
			}
		}
		return true
	})
}

// startTwoBrokerCluster starts two brokers sharing an embedded etcd and
// returns them and their addresses; extra props are added to both.
func startTwoBrokerCluster(t *testing.T, extra ...map[string]string) ([]*Broker, []string) {
	t.Helper()
	brokers, addrs, _ := startEtcdBrokers(t, 2, func(int, string) map[string]string {
		props := map[string]string{
			"offsets.topic.replication.factor": "1",
			"offsets.topic.num.partitions":     "2",
		}
		for _, e := range extra {
			maps.Copy(props, e)
		}
		return props
	})
	return brokers, addrs
}

// TestGroupConfigs_ConsumerTimeouts: consumer.heartbeat.interval.ms and
// consumer.session.timeout.ms are group configs, as in Kafka 4.4: described
// with their broker defaults until set, refused outside the broker's bounds
// with Kafka's error, and a set heartbeat interval is what
// ConsumerGroupHeartbeat gives that group's members (another group keeps
// the broker's).
func TestGroupConfigs_ConsumerTimeouts(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	if got := describeGroupConfig(t, cl, "cg-own", "consumer.session.timeout.ms"); got != "45000/DEFAULT_CONFIG" {
		t.Errorf("consumer.session.timeout.ms before: %s", got)
	}
	if got := describeGroupConfig(t, cl, "cg-own", "consumer.heartbeat.interval.ms"); got != "5000/DEFAULT_CONFIG" {
		t.Errorf("consumer.heartbeat.interval.ms before: %s", got)
	}
	if code := alterGroupConfig(t, cl, "cg-own", "consumer.heartbeat.interval.ms", kmsg.StringPtr("4000")); code != kerr.InvalidConfig.Code {
		t.Errorf("heartbeat 4000 (below group.consumer.min.heartbeat.interval.ms): %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfig(t, cl, "cg-own", "consumer.heartbeat.interval.ms", kmsg.StringPtr("7000")); code != 0 {
		t.Fatalf("set the heartbeat interval: %v", kerr.ErrorForCode(code))
	}
	if got := describeGroupConfig(t, cl, "cg-own", "consumer.heartbeat.interval.ms"); got != "7000/GROUP_CONFIG" {
		t.Errorf("consumer.heartbeat.interval.ms after: %s", got)
	}
	join := func(group string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, "AAAAAAAAAAAAAAAAAAAAAA", 0, 30000
		req.SubscribedTopicNames = []string{"cg-timeouts"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("join %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	if got := join("cg-own").HeartbeatIntervalMillis; got != 7000 {
		t.Errorf("cg-own's heartbeat interval %d, want its group config's 7000", got)
	}
	if got := join("cg-other").HeartbeatIntervalMillis; got != 5000 {
		t.Errorf("cg-other's heartbeat interval %d, want the broker's 5000", got)
	}
}

// TestGroupConfigs_BrokerBounds: the broker's group.*.min/max.* properties
// bound group configs, as in Kafka 4.4: a group may be given what they
// allow, a value a later change of them leaves outside is capped when used
// (and keeps the group from any other change until it is fixed), and the
// broker refuses to start with a default outside them.
func TestGroupConfigs_BrokerBounds(t *testing.T) {
	if _, err := New(Config{DataDir: t.TempDir(), Props: map[string]string{"group.consumer.session.timeout.ms": "90000"}, Logger: testLogger()}); err == nil ||
		err.Error() != "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms" {
		t.Fatalf("start with a session timeout above the maximum: %v", err)
	}
	dir := t.TempDir()
	b, addr := startBroker(t, dir, map[string]string{"group.consumer.max.heartbeat.interval.ms": "20000"})
	cl := newClient(t, addr)
	if code := alterGroupConfig(t, cl, "cg-b", "consumer.heartbeat.interval.ms", kmsg.StringPtr("20001")); code != kerr.InvalidConfig.Code {
		t.Errorf("heartbeat 20001: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfig(t, cl, "cg-b", "consumer.heartbeat.interval.ms", kmsg.StringPtr("18000")); code != 0 {
		t.Fatalf("heartbeat 18000 within the broker's maximum: %v", kerr.ErrorForCode(code))
	}
	join := func(cl *kgo.Client, member string) int32 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "cg-b", member, 0, 30000
		req.SubscribedTopicNames = []string{"cg-bounds"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.HeartbeatIntervalMillis
	}
	if got := join(cl, "AAAAAAAAAAAAAAAAAAAAAA"); got != 18000 {
		t.Errorf("heartbeat interval %d, want the group's 18000", got)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The broker's maximum back at its default, 15000.
	_, addr = startBroker(t, dir, nil)
	cl = newClient(t, addr)
	if got := describeGroupConfig(t, cl, "cg-b", "consumer.heartbeat.interval.ms"); got != "18000/GROUP_CONFIG" {
		t.Errorf("described: %s, want the stored 18000", got)
	}
	if got := join(cl, "BBBBBBBBBBBBBBBBBBBBBB"); got != 15000 {
		t.Errorf("heartbeat interval %d, want 15000: the group's 18000 capped to the broker's maximum", got)
	}
	if code, msg := alterGroupConfigMsg(t, cl, "cg-b", "consumer.session.timeout.ms", kmsg.StringPtr("50000")); code != kerr.InvalidConfig.Code ||
		msg != "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive." {
		t.Errorf("another change to the group: %v %q, want INVALID_CONFIG for its stored heartbeat", kerr.ErrorForCode(code), msg)
	}
}
