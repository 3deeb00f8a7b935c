//go:build !unix

package storage

// processLimits: neither limit is known here (Windows has no
// RLIMIT_NOFILE; its handles are limited by memory).
func processLimits() (files, maps int64) { return 0, 0 }
