package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/cluster"
	"github.com/gregor-broker/gregor/metadata"
)

// joinEtcd is package cluster's etcd store, as cmd/gregor wires it.
func joinEtcd(ctx context.Context, cfg metadata.JoinConfig) (Cluster, error) {
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// A program that links no metadata store gets a clear refusal of cluster
// mode from New, before anything is opened.
func TestNew_ClusterModeNeedsJoinCluster(t *testing.T) {
	for _, props := range []map[string]string{
		{"node.id": "1", "controller.quorum.voters": "1@127.0.0.1:20999"},
		{"node.id": "1", "etcd.endpoints": "http://127.0.0.1:2379"},
	} {
		_, err := New(Config{DataDir: t.TempDir(), Props: props, Logger: testLogger()})
		if !errors.Is(err, errNoClusterStore) {
			t.Errorf("%v: New: %v, want %v", props, err, errNoClusterStore)
		}
	}
}
