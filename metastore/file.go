package metastore

import (
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
}

// OpenFile reads the collection from cfg.Path; a missing file is an empty
// collection.
func OpenFile(cfg FileConfig) (*File, error) {
	f := &File{cfg: cfg}
	recs := Records{}
	if cfg.Path != "" {
		data, err := os.ReadFile(cfg.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			if recs, err = cfg.Decode(data); err != nil {
				return nil, fmt.Errorf("%s: %w", cfg.Path, err)
			}
		}
	}
	f.snap.Store(&fileSnapshot{recs: recs, rev: 1})
	return f, nil
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
	return s.recs, s.rev
}

// Update implements Collection: the file is replaced before the change is
// visible, and not at all when the write fails.
func (f *File) Update(ctx context.Context, put Records, del []string) (int64, error) {
	if len(put) == 0 && len(del) == 0 {
		return 0, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.snap.Load()
	next := maps.Clone(cur.recs)
	for _, k := range del {
		delete(next, k)
	}
	maps.Copy(next, put)
	if f.cfg.Path != "" {
		data, err := f.cfg.Encode(next)
		if err != nil {
			return 0, err
		}
		if err := f.cfg.Write(f.cfg.Path, data); err != nil {
			return 0, err
		}
	}
	f.snap.Store(&fileSnapshot{recs: next, rev: cur.rev + 1})
	return cur.rev + 1, nil
}
