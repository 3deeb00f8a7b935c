//go:build linux || darwin

package broker

import (
	"os"

	"golang.org/x/sys/unix"
)

// tryLockFile takes an exclusive flock on f without waiting; held reports
// that another holder has it (EWOULDBLOCK), err any failure. The lock is
// released when f is closed or the process exits (datadir_windows.go has
// Windows').
func tryLockFile(f *os.File) (held bool, err error) {
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	return err == unix.EWOULDBLOCK, err
}

// diskSpace returns the total and usable bytes of the file system holding
// dir (usable: available to an unprivileged user, as Java's
// File.getUsableSpace), or -1, -1.
func diskSpace(dir string) (total, usable int64) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return -1, -1
	}
	return int64(fs.Blocks) * int64(fs.Bsize), int64(fs.Bavail) * int64(fs.Bsize)
}
