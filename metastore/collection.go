package metastore

import "context"

// Records are a collection's records by key. Values are opaque here (their
// owner's JSON); a Records returned by a Collection is shared and must not
// be modified.
type Records = map[string][]byte

// A Collection is one kind of state kept as records by key.
type Collection interface {
	// Snapshot returns the records and their revision. Two snapshots with
	// the same revision hold the same records.
	Snapshot() (Records, int64)
	// Update stores put and removes del (keys) together, and returns
	// once Snapshot reflects the change, with the revision it produced:
	// 0 when there was nothing to do.
	Update(ctx context.Context, put Records, del []string) (int64, error)
}
