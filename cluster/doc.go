// Package cluster keeps a Gregor cluster's metadata in etcd: broker
// registrations, the controller, topics, partition leadership and ISR,
// topic configs and producer-id blocks.
package cluster

import (
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)
