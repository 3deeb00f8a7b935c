package coordinator

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// boltFile is groups.db or txns.db: opened at once when the file exists
// (so a corrupt or locked file fails Open as before), created on the first
// write otherwise. Creating a bbolt file costs four fsyncs, which a broker
// that never serves a group or a transaction need not pay at start: a file
// that does not exist holds nothing, and the first Update creates it with
// bbolt's usual durability before writing to it.
type boltFile struct {
	path string

	mu     sync.Mutex
	db     *bolt.DB // nil until the file exists and is open
	closed bool
}

var boltOptions = &bolt.Options{Timeout: 5 * time.Second}

// openBoltFile opens path if it exists.
func openBoltFile(path string) (*boltFile, error) {
	f := &boltFile{path: path}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return f, nil
		}
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, boltOptions)
	if err != nil {
		return nil, err
	}
	f.db = db
	return f, nil
}

// created reports whether the file exists (was opened or created).
func (f *boltFile) created() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.db != nil
}

// View runs fn in a read-only transaction. Before the file is created it
// holds no bucket, and fn is not called: callers treat "no bucket" and "not
// called" alike.
func (f *boltFile) View(fn func(*bolt.Tx) error) error {
	f.mu.Lock()
	db, closed := f.db, f.closed
	f.mu.Unlock()
	if closed {
		return berrors.ErrDatabaseNotOpen
	}
	if db == nil {
		return nil
	}
	return db.View(fn)
}

// Update runs fn in a read-write transaction, creating the file first if
// needed.
func (f *boltFile) Update(fn func(*bolt.Tx) error) error {
	db, err := f.open()
	if err != nil {
		return err
	}
	return db.Update(fn)
}

func (f *boltFile) open() (*bolt.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, berrors.ErrDatabaseNotOpen
	}
	if f.db == nil {
		db, err := bolt.Open(f.path, 0o600, boltOptions)
		if err != nil {
			return nil, err
		}
		f.db = db
	}
	return f.db, nil
}

// Close closes the file if it was opened.
func (f *boltFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.db == nil {
		return nil
	}
	return f.db.Close()
}
