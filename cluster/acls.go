package cluster

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyACLs holds the ACL bindings, /gregor/acls/<id>: one key per binding,
// its value the broker's JSON encoding of the binding, opaque here (the id
// is derived from the binding, so storing one twice is harmless). They are
// part of every Metadata snapshot (Metadata.ACLs), so every broker sees a
// change as soon as its watch delivers it.
const keyACLs = "/gregor/acls/"

// UpdateACLs stores put and removes del (ids) in one transaction, and
// returns the etcd revision it produced; WaitForRevision with it makes the
// change visible to the caller's own snapshots.
func (n *Node) UpdateACLs(ctx context.Context, put map[string][]byte, del []string) (int64, error) {
	var ops []clientv3.Op
	for id, v := range put {
		ops = append(ops, clientv3.OpPut(keyACLs+id, string(v)))
	}
	for _, id := range del {
		ops = append(ops, clientv3.OpDelete(keyACLs+id))
	}
	if len(ops) == 0 {
		return 0, nil
	}
	resp, err := n.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: update acls: %w", err)
	}
	return resp.Header.Revision, nil
}
