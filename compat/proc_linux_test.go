package compat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dieWithTest is the SysProcAttr of a broker that dies with the test
// process, even when a test panics (Pdeathsig, Linux's; proc_other_test.go
// elsewhere).
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// openFilesUnder counts the files process pid has open (/proc/PID/fd)
// whose path is under dir and ends in suffix. A descriptor closed while
// the directory is read is skipped.
func openFilesUnder(pid int, dir, suffix string) (int, error) {
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return 0, err
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue
		}
		if strings.HasPrefix(target, prefix) && strings.HasSuffix(target, suffix) {
			n++
		}
	}
	return n, nil
}
