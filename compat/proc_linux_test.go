package compat

import "syscall"

// dieWithTest is the SysProcAttr of a broker that dies with the test
// process, even when a test panics (Pdeathsig, Linux's; proc_other_test.go
// elsewhere).
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
