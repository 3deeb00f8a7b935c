//go:build !linux

package kafkaref

import (
	"os"
	"syscall"
)

// GroupSysProcAttr is nil here: a process group that dies with its parent
// is Linux's (proc_linux.go); the reference broker and the brokers beside
// it are run on Linux, this only keeps the package building elsewhere.
func GroupSysProcAttr() *syscall.SysProcAttr { return nil }

// SignalGroup sends sig to the process pid alone (no group, see
// GroupSysProcAttr); where the signal cannot be sent (Windows knows only
// kill) the process is killed.
func SignalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Signal(sig); err == nil || sig == syscall.SIGKILL {
		return err
	}
	return p.Kill()
}
