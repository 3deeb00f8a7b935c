package metastore

import (
	"context"
	"errors"
)

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
	// Modify replaces the record at key by what fn makes of it: cur is
	// the record (nil when there is none), and fn returning nil removes
	// it. The write is conditioned on the record being as fn saw it; if it
	// changed meanwhile, fn is called again on the new one, a few times at
	// most (then ErrConflict). An error from fn is returned as is and
	// nothing is written. It returns like Update: 0 when fn gave back the
	// record unchanged.
	Modify(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) (int64, error)
}

// ErrConflict is returned by Modify when the record kept changing under it.
var ErrConflict = errors.New("metastore: the record kept changing; try again")
