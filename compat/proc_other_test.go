//go:build !linux

package compat

import "syscall"

// dieWithTest is nil here: only Linux can tie a child's life to its parent
// (proc_linux_test.go). The compat suite runs on Linux; this keeps it
// building elsewhere.
func dieWithTest() *syscall.SysProcAttr { return nil }
