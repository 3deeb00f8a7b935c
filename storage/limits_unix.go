//go:build unix

package storage

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// processLimits returns the process's open-file limit (RLIMIT_NOFILE's
// soft limit, which Go raises to the hard limit at start) and, on Linux,
// vm.max_map_count; 0 for what is not known.
func processLimits() (files, maps int64) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<40 {
		files = int64(rl.Cur)
	}
	if b, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			maps = n
		}
	}
	return files, maps
}
