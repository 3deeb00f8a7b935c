package cluster

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyQuotas holds the client quotas, /gregor/quotas/<entity>: one key per
// quota entity, named like Kafka's ZooKeeper config paths
// (users/<user>/clients/<client-id>, users/<user>, clients/<client-id>,
// ips/<ip>, names escaped and "<default>" for a default entity), its value
// the broker's JSON record of the entity's quotas, opaque here. They are
// part of every Metadata snapshot (Metadata.Quotas), so every broker
// enforces a change as soon as its watch delivers it.
const keyQuotas = "/gregor/quotas/"

// UpdateQuotas stores put and removes del (entity ids) in one transaction,
// and returns the etcd revision it produced (0 when there was nothing to
// do); WaitForRevision with it makes the change visible to the caller's own
// snapshots.
func (n *Node) UpdateQuotas(ctx context.Context, put map[string][]byte, del []string) (int64, error) {
	var ops []clientv3.Op
	for id, v := range put {
		ops = append(ops, clientv3.OpPut(keyQuotas+id, string(v)))
	}
	for _, id := range del {
		ops = append(ops, clientv3.OpDelete(keyQuotas+id))
	}
	if len(ops) == 0 {
		return 0, nil
	}
	resp, err := n.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: update quotas: %w", err)
	}
	return resp.Header.Revision, nil
}
