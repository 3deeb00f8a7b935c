//go:build !linux

package storage

// The portable ways of the LogDir and of atomic replacement, for systems
// without renameat2 and syncfs(2) (sys_linux.go has Linux's).

// placeFile puts tmp in place of path with a rename (placeByRename): an
// atomic replacement, as RENAME_EXCHANGE is on Linux, but the old file's
// inode is freed rather than kept as path's spare, so keepSpare is moot.
// A tmp already gone is not an error.
func placeFile(tmp, path string, _ bool) error { return placeByRename(tmp, path) }

// syncFS makes durable everything written under d: each file and directory
// under it is fsynced (syncTree), which is what syncfs(2) does for the
// whole file system on Linux. It costs one fsync per file, and Sync only
// has work at start, at stop and after a reused directory.
func (d *LogDir) syncFS() error { return syncTree(d.path, true, fsyncPath) }

// syncEntries makes durable the renames Sync has just done: the temporary
// files' content was synced before them (syncFS), so only the directories
// under d are fsynced.
func (d *LogDir) syncEntries() error { return syncTree(d.path, false, fsyncPath) }
