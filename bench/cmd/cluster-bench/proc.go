package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds returns utime+stime of pid in seconds (every thread of the
// process); 0 if it cannot be read.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// after it f[0] is field 3, utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if errors.Join(err1, err2) != nil {
		return 0
	}
	return float64(ut+st) / clockTicks
}

// sumCPU is cpuSeconds summed over pids.
func sumCPU(pids []int) float64 {
	var s float64
	for _, p := range pids {
		s += cpuSeconds(p)
	}
	return s
}

// rssKB returns VmRSS of pid in kB (0 if it cannot be read).
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// Cleanup: every started process is registered here; exit runs the
// registered functions once, last first, on a normal end, a fatal error,
// the -timeout or SIGINT/SIGTERM.
var (
	cleanupMu   sync.Mutex
	cleanups    []func()
	cleanupOnce sync.Once
)

func atExit(f func()) {
	cleanupMu.Lock()
	cleanups = append(cleanups, f)
	cleanupMu.Unlock()
}

func cleanup() {
	cleanupOnce.Do(func() {
		cleanupMu.Lock()
		fs := cleanups
		cleanupMu.Unlock()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	})
}

// fatalf logs, kills everything started and exits with status 1.
func fatalf(format string, args ...any) {
	log.Printf(format, args...)
	cleanup()
	os.Exit(1)
}
