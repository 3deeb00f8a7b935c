package main

import (
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
)

// openFiles is the number of open file descriptors of pid (0 if it cannot
// be read).
func openFiles(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(es)
}

// raiseNofile raises this process's soft RLIMIT_NOFILE to its hard limit
// and returns it. The brokers inherit it: Go gives children the raised
// limit once the program has set it itself.
func raiseNofile() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	r.Cur = r.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		log.Printf("setrlimit NOFILE %d: %v", r.Max, err)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	}
	return r.Cur
}

// loadAvg is the 1-, 5- and 15-minute load average: how much else the
// machine was doing.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Cleanup: every started process is registered here; cleanup runs the
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

// fatalf logs, kills everything started, removes the temporary directory
// and exits with status 1.
func fatalf(format string, args ...any) {
	log.Printf(format, args...)
	cleanup()
	os.Exit(1)
}
