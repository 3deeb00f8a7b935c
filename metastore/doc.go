// Package metastore is the seam between the broker's policy state that is
// cluster metadata (ACL bindings, client quotas, ...) and where it is
// kept: a file under <data-dir>/__meta on a single node, keys under a
// prefix in etcd in a cluster (package cluster's Node.Collection). Each
// kind of state is a Collection of opaque records by key with a revision
// that moves whenever the records may have changed; a View decodes a
// collection into what its readers want and decodes again only when the
// revision moves, so a reader on a hot path (the authorizer, quota
// enforcement) pays an atomic load and a comparison.
//
// The package imports nothing of Gregor's. The records' encoding belongs
// to their owner: a File is given the functions that turn its file into
// records and back, so files written before this package keep their
// format.
package metastore
