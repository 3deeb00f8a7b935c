//go:build !linux

package compat

import (
	"errors"
	"syscall"
)

// dieWithTest is nil here: only Linux can tie a child's life to its parent
// (proc_linux_test.go). The compat suite runs on Linux; this keeps it
// building elsewhere.
func dieWithTest() *syscall.SysProcAttr { return nil }

// openFilesUnder needs /proc (proc_linux_test.go).
func openFilesUnder(pid int, dir, suffix string) (int, error) { return 0, errors.ErrUnsupported }
