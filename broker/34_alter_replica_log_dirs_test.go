package broker

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterReplicaLogDirs_OneDirectory: with the one data directory, a
// move to it (named as DescribeLogDirs names it, or by a path that cleans
// to it) is NONE and leaves the partition where it is; another directory
// is LOG_DIR_NOT_FOUND; an unknown topic or partition index
// UNKNOWN_TOPIC_OR_PARTITION: Kafka 4.4's answers.
func TestAlterReplicaLogDirs_OneDirectory(t *testing.T) {
	dir := t.TempDir()
	_, addr := startBroker(t, dir, nil)
	cl := newClient(t, addr)
	if _, err := kadm.NewClient(cl).CreateTopic(testCtx(t), 2, 1, nil, "arld"); err != nil {
		t.Fatal(err)
	}
	dresp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(testCtx(t), cl)
	if err != nil || len(dresp.Dirs) != 1 {
		t.Fatalf("DescribeLogDirs: %v %+v", err, dresp)
	}
	own := dresp.Dirs[0].Dir
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Version = 2
	add := func(d string, topic string, parts ...int32) {
		rd := kmsg.NewAlterReplicaLogDirsRequestDir()
		rd.Dir = d
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = topic, parts
		rd.Topics = append(rd.Topics, rt)
		req.Dirs = append(req.Dirs, rd)
	}
	add(own, "arld", 0)
	add(filepath.Join(own, "x", ".."), "arld", 1)
	add(filepath.Join(t.TempDir(), "elsewhere"), "other-dir", 0)
	add(own, "arld-nope", 0)
	add(own, "arld-index", 7)
	// Over a connection of its own: franz-go would route each partition to
	// its leader and refuse unknown ones itself.
	rc := dialRaw(t, addr)
	rc.send(1, req)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	rc.recv(1, resp)
	got := map[string]map[int32]int16{}
	for _, rt := range resp.Topics {
		if got[rt.Topic] == nil {
			got[rt.Topic] = map[int32]int16{}
		}
		for _, p := range rt.Partitions {
			got[rt.Topic][p.Partition] = p.ErrorCode
		}
	}
	// "other-dir" and "arld-index" name no topic: only the directory (or
	// the index) decides, as for Kafka.
	for _, c := range []struct {
		topic     string
		partition int32
		want      *kerr.Error
	}{
		{"arld", 0, nil},
		{"arld", 1, nil},
		{"other-dir", 0, kerr.LogDirNotFound},
		{"arld-nope", 0, kerr.UnknownTopicOrPartition},
		{"arld-index", 7, kerr.UnknownTopicOrPartition},
	} {
		code, ok := got[c.topic][c.partition]
		wantCode := int16(0)
		if c.want != nil {
			wantCode = c.want.Code
		}
		if !ok || code != wantCode {
			t.Errorf("%s-%d: %v (answered %v), want %v", c.topic, c.partition, kerr.ErrorForCode(code), ok, c.want)
		}
	}
	// The replicas did not move.
	dresp, err = kmsg.NewPtrDescribeLogDirsRequest().RequestWith(testCtx(t), cl)
	if err != nil || len(dresp.Dirs) != 1 || dresp.Dirs[0].Dir != own || len(dresp.Dirs[0].Topics) != 1 || len(dresp.Dirs[0].Topics[0].Partitions) != 2 {
		t.Fatalf("DescribeLogDirs afterwards: %v %+v", err, dresp)
	}
}
