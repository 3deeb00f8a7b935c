package cluster

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyUsers holds the SASL users, /gregor/users/<name>; the value is the
// broker's JSON record of the user's SCRAM credentials, opaque here.
const keyUsers = "/gregor/users/"

// User returns the stored record of a user, nil when there is none.
func (n *Node) User(ctx context.Context, name string) ([]byte, error) {
	resp, err := n.cli.Get(ctx, keyUsers+name)
	if err != nil {
		return nil, fmt.Errorf("cluster: get user: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0].Value, nil
}

// PutUser stores a user's record, or deletes the user when val is nil.
func (n *Node) PutUser(ctx context.Context, name string, val []byte) error {
	var err error
	if val == nil {
		_, err = n.cli.Delete(ctx, keyUsers+name)
	} else {
		_, err = n.cli.Put(ctx, keyUsers+name, string(val))
	}
	if err != nil {
		return fmt.Errorf("cluster: put user: %w", err)
	}
	return nil
}

// Users returns every user's record by name.
func (n *Node) Users(ctx context.Context) (map[string][]byte, error) {
	resp, err := n.cli.Get(ctx, keyUsers, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: list users: %w", err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), keyUsers)] = kv.Value
	}
	return out, nil
}
