package metastore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
)

// FileConfig says where a File keeps its records and how they are written.
type FileConfig struct {
	// Path is the file. Empty: the records live in memory only.
	Path string
	// Decode turns the file's contents into records; Encode turns records
	// into what the file holds.
	Decode func(data []byte) (Records, error)
	Encode func(Records) ([]byte, error)
	// Write replaces the file at path with data durably (atomically, as
	// storage.WriteFileAtomic does).
	Write func(path string, data []byte) error
	// Reread is set when another program may replace the file while it is
	// open (gregor users add writes users.json offline, and a running
	// single node sees it): each Snapshot then compares the file's
	// identity, size and modification time with those last read or
	// written, and reads it again, as a new revision, when they differ.
	// A file that does not read or decode then leaves the records as they
	// were, until it does.
	Reread bool
}

// File is a Collection kept in one file, rewritten whole by each Update,
// for a single node. Its revision counts the updates since it was opened.
type File struct {
	cfg  FileConfig
	mu   sync.Mutex // serialises updates
	snap atomic.Pointer[fileSnapshot]
}

type fileSnapshot struct {
	recs Records
	rev  int64
	fi   os.FileInfo // the file as last read or written; nil when absent or not kept
}

// OpenFile reads the collection from cfg.Path; a missing file is an empty
// collection.
func OpenFile(cfg FileConfig) (*File, error) {
	f := &File{cfg: cfg}
	recs, fi, err := f.read()
	if err != nil {
		return nil, err
	}
	f.snap.Store(&fileSnapshot{recs: recs, rev: 1, fi: fi})
	return f, nil
}

// read reads and decodes the file, with its identity when Reread is set;
// a missing file is an empty collection.
func (f *File) read() (Records, os.FileInfo, error) {
	if f.cfg.Path == "" {
		return Records{}, nil, nil
	}
	var fi os.FileInfo
	if f.cfg.Reread {
		var err error
		if fi, err = os.Stat(f.cfg.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
	}
	data, err := os.ReadFile(f.cfg.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Records{}, nil, nil
	case err != nil:
		return nil, nil, err
	}
	recs, err := f.cfg.Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.cfg.Path, err)
	}
	return recs, fi, nil
}

// changed tells whether the file is no longer the one last read or
// written.
func changed(was, now os.FileInfo) bool {
	if was == nil || now == nil {
		return (was == nil) != (now == nil)
	}
	return !os.SameFile(was, now) || was.Size() != now.Size() || !was.ModTime().Equal(now.ModTime())
}

// Memory is a File that keeps recs in memory only (tests, and a broker
// that persists nothing).
func Memory(recs Records) *File {
	f := &File{}
	if recs == nil {
		recs = Records{}
	}
	f.snap.Store(&fileSnapshot{recs: recs, rev: 1})
	return f
}

// Snapshot implements Collection.
func (f *File) Snapshot() (Records, int64) {
	s := f.snap.Load()
	if f.cfg.Reread {
		s = f.reread(s)
	}
	return s.recs, s.rev
}

// reread reads the file again when another program replaced it since s.
func (f *File) reread(s *fileSnapshot) *fileSnapshot {
	now, err := os.Stat(f.cfg.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) || !changed(s.fi, now) {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rereadLocked()
}

// rereadLocked reads the file again when another program replaced it
// since the current snapshot, and returns the snapshot then current.
// f.mu should be held.
func (f *File) rereadLocked() *fileSnapshot {
	s := f.snap.Load()
	now, err := os.Stat(f.cfg.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) || !changed(s.fi, now) {
		return s // unchanged, or an update or another reader was first
	}
	recs, fi, err := f.read()
	if err != nil {
		return s
	}
	next := &fileSnapshot{recs: recs, rev: s.rev + 1, fi: fi}
	f.snap.Store(next)
	return next
}

// Update implements Collection: the file is replaced before the change is
// visible, and not at all when the write fails.
func (f *File) Update(ctx context.Context, put Records, del []string) (int64, error) {
	if len(put) == 0 && len(del) == 0 {
		return 0, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.current()
	next := maps.Clone(cur.recs)
	for _, k := range del {
		delete(next, k)
	}
	maps.Copy(next, put)
	return f.store(cur, next)
}

// Modify implements Collection. Updates are serialised, so fn is called
// once, on the record as it is.
func (f *File) Modify(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.current()
	old, had := cur.recs[key]
	v, err := fn(old)
	if err != nil {
		return 0, err
	}
	if (v == nil && !had) || (v != nil && had && bytes.Equal(v, old)) {
		return 0, nil
	}
	next := maps.Clone(cur.recs)
	if v == nil {
		delete(next, key)
	} else {
		next[key] = v
	}
	return f.store(cur, next)
}

// current is the snapshot an update starts from (f.mu held): the file as
// another program may have left it, when Reread is set.
func (f *File) current() *fileSnapshot {
	if f.cfg.Reread {
		return f.rereadLocked() // keep what another program wrote
	}
	return f.snap.Load()
}

// store writes next, the records that follow cur, and makes them the
// snapshot (f.mu held).
func (f *File) store(cur *fileSnapshot, next Records) (int64, error) {
	if f.cfg.Path != "" {
		data, err := f.cfg.Encode(next)
		if err != nil {
			return 0, err
		}
		if err := f.cfg.Write(f.cfg.Path, data); err != nil {
			return 0, err
		}
	}
	var fi os.FileInfo
	if f.cfg.Reread {
		fi, _ = os.Stat(f.cfg.Path) // on an error the next Snapshot reads the file again
	}
	f.snap.Store(&fileSnapshot{recs: next, rev: cur.rev + 1, fi: fi})
	return cur.rev + 1, nil
}
