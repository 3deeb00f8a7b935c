package main

import (
	"log"
	"os"
	"sync"

	"github.com/gregor-broker/gregor/bench/internal/procstat"
)

// sumCPU is cpuSeconds summed over pids.
func sumCPU(pids []int) float64 {
	var s float64
	for _, p := range pids {
		s += procstat.CPUSeconds(p)
	}
	return s
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
