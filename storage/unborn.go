package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Unborn logs. A log opened through a LogDir whose directory does not exist
// is unborn: it is an empty log in memory only, with nothing on disk, until
// it first needs a file (its first append, truncation, checkpoint or read
// of its segment), when its directory and first segment are created. So
// creating ten thousand partitions that are written later, or never, costs
// no file system call each, and a broker opening them after a restart
// finds nothing to read. Kafka creates every log when the controller's
// record reaches the broker, answering CreateTopics before; Gregor answers
// once a partition can be written, and its first write creates the files.
//
// An unborn log has one segment, at offset 0, whose file state carries the
// birth (fileState.bear): the segment's first use creates the directory,
// the segment's empty indexes, the files the owner asked for (AddFile:
// Kafka's partition.metadata) and the .log file, as createSegment would,
// under the segment's file lock, so readers and the writer never see half
// a birth. The log's own writes that are not through its segment
// (checkpoint, leader-epoch cache, truncation's new segment) call born
// first. Closing an unborn log writes nothing: its directory does not
// exist, and the next open finds it unborn again, which is what it was.
// A directory already at the path when a log is born is not the log's: the
// LogDir's in-the-way function (SetInTheWay, the owner's policy) sets it
// aside or accepts it, and without one only an empty one is used; nothing
// in it is written over. LogDir.CreateLog makes an unborn log without
// looking for its directory, for an owner that knows it is not there.
// The files of a birth are not fsynced, as a new log's files never are
// (see doc.go): the owner's record of the partition (a topic record) is
// what makes it exist, and an open after a crash that lost them finds it
// unborn.

// openUnborn sets up l, whose directory does not exist, as an empty log
// with nothing on disk.
func (l *Log) openUnborn() {
	l.unborn.Store(true)
	s := newSegment(l.dir, 0, l.logger, l.files())
	s.refs.Store(1)
	s.maxTs.Store(noTimestamp)
	s.loaded.Store(true)
	s.fh.bear = l.bear
	segs := []*segment{s}
	l.segs.Store(&segs)
	l.initEnd(segs, 0, 0)
	l.replicated = l.cfg.ReplicatedHighWatermark
	l.logEnd.Store(&endState{hw: 0, seg: s, pos: 0})
	l.epochs.Store(&[]EpochEntry{})
	l.publishStableLocked()
	l.ckpt, l.ckptKnown = l.checkpointNow(), true
}

// bear creates an unborn log's directory and the files its owner added;
// its first segment's use then creates the .log file. Called by that use,
// under the segment's file lock.
func (l *Log) bear() error {
	if !l.dirMade {
		if err := l.makeDir(); err != nil {
			return err
		}
		l.dirMade = true
	}
	// The first segment's empty indexes, as createSegment makes them: a
	// later open finds them and does not rebuild them.
	s := l.segments()[0]
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		f, err := os.OpenFile(s.path(suffix), os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return ioErr("create", s.path(suffix), err)
		}
		f.Close()
	}
	l.birthMu.Lock()
	defer l.birthMu.Unlock()
	for _, f := range l.birthFiles {
		if err := writeOwnFile(filepath.Join(l.dir, f.Path), f.Data); err != nil {
			return err
		}
	}
	l.birthFiles = nil
	l.unborn.Store(false)
	return nil
}

// makeDir makes an unborn log's directory. A directory already there is
// not the log's: the LogDir's in-the-way function (SetInTheWay) sets it
// aside or accepts it; without one, only an empty directory is used.
// Nothing in it is written over or deleted here.
func (l *Log) makeDir() error {
	err := os.Mkdir(l.dir, 0o755)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return ioErr("mkdir", l.dir, err)
	}
	if f := l.ld.inTheWay.Load(); f != nil {
		if err := (*f)(l.dir); err != nil {
			return err
		}
	} else if ents, err := os.ReadDir(l.dir); err != nil {
		return ioErr("readdir", l.dir, err)
	} else if len(ents) > 0 {
		return ioErr("mkdir", l.dir, errors.New("a directory the log did not make is in its way"))
	}
	if err := os.Mkdir(l.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return ioErr("mkdir", l.dir, err)
	}
	return nil
}

// born makes an unborn log's directory and first segment exist (through
// the segment's use, which creates them once); nothing for a born log.
func (l *Log) born() error {
	if !l.unborn.Load() {
		return nil
	}
	s := l.segments()[0]
	if _, err := s.use(); err != nil {
		return err
	}
	s.unuse()
	return nil
}

// Unborn reports whether the log has nothing on disk yet: opened through a
// LogDir where its directory did not exist, and not needed a file since.
func (l *Log) Unborn() bool { return l.unborn.Load() }

// AddFile writes a small file of the owner's, name in the log's directory
// (Kafka's partition.metadata), through a temporary file and a rename,
// without an fsync: now when the log exists on disk, else when its
// directory is created.
func (l *Log) AddFile(name string, data []byte) error {
	if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
		return ioErr("create", filepath.Join(l.dir, name), errors.New("not a file name in the log's directory"))
	}
	if l.unborn.Load() {
		l.birthMu.Lock()
		if l.unborn.Load() {
			l.birthFiles = append(l.birthFiles, File{Path: name, Data: data})
			l.birthMu.Unlock()
			return nil
		}
		l.birthMu.Unlock()
	}
	return writeOwnFile(filepath.Join(l.dir, name), data)
}

// writeOwnFile writes data to path through a temporary file (writeTemp)
// and a rename, without an fsync.
func writeOwnFile(path string, data []byte) error {
	tmp := path + tmpSuffix
	if err := writeTemp(tmp, data, false); err != nil {
		return err
	}
	if err := renameFile(tmp, path); err != nil {
		return ioErr("rename", tmp, err)
	}
	return nil
}
