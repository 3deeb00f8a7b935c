package compat

import "syscall"

// Windows has no SIGSTOP or SIGCONT: os.Process.Signal refuses these
// values, so a test that freezes a node fails there instead of building
// only on Unix (signals_unix_test.go).
const (
	sigStop = syscall.Signal(0x13)
	sigCont = syscall.Signal(0x12)
)
