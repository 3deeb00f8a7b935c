package kafkaref

import "syscall"

// GroupSysProcAttr is the SysProcAttr of a command that runs in its own
// process group, so that SignalGroup reaches every process it starts, and
// that dies with this process (Pdeathsig). Other systems: proc_other.go.
func GroupSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// SignalGroup sends sig to the process group whose leader is pid (a
// command started with GroupSysProcAttr).
func SignalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
