package metastore

import (
	"sync"
	"sync/atomic"
)

// A View is what a collection's readers make of its records, decoded
// again only when the collection's revision moves.
type View[T any] struct {
	c      Collection
	decode func(Records) T
	mu     sync.Mutex // serialises decodes
	cur    atomic.Pointer[viewed[T]]
}

type viewed[T any] struct {
	rev int64
	val T
}

// NewView returns a view of c through decode. decode runs under the
// view's lock, once per revision seen, so it may also publish what it
// decoded (an index that readers use without the view).
func NewView[T any](c Collection, decode func(Records) T) *View[T] {
	return &View[T]{c: c, decode: decode}
}

// Get returns the decoded records as of the collection's latest revision.
// The result is shared: callers must not modify it.
func (v *View[T]) Get() T {
	if p := v.cur.Load(); p != nil {
		if _, rev := v.c.Snapshot(); p.rev == rev {
			return p.val
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	recs, rev := v.c.Snapshot()
	if p := v.cur.Load(); p != nil && p.rev == rev {
		return p.val
	}
	val := v.decode(recs)
	v.cur.Store(&viewed[T]{rev: rev, val: val})
	return val
}

// Collection is the collection viewed.
func (v *View[T]) Collection() Collection { return v.c }
