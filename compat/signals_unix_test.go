//go:build unix

package compat

import "syscall"

// The signals that freeze and thaw a cluster node (clusterNode.Stop, Cont).
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
