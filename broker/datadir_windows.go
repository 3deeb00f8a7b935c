package broker

import (
	"os"

	"golang.org/x/sys/windows"
)

// tryLockFile takes an exclusive lock on f's first byte without waiting
// (LockFileEx, Windows' flock); held reports that another handle has it
// (ERROR_LOCK_VIOLATION), err any failure. The lock is released when f is
// closed or the process exits.
func tryLockFile(f *os.File) (held bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &windows.Overlapped{})
	return err == windows.ERROR_LOCK_VIOLATION, err
}

// diskSpace returns the total and usable bytes of the volume holding dir
// (usable: available to this user, as Java's File.getUsableSpace), or
// -1, -1.
func diskSpace(dir string) (total, usable int64) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return -1, -1
	}
	var avail, size, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &size, &free); err != nil {
		return -1, -1
	}
	return int64(size), int64(avail)
}
