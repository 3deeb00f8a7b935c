package broker

import (
	"time"

	"golang.org/x/sys/windows"
)

// processCPU is the CPU time (user and kernel) this process has used.
func processCPU() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	return filetimeDuration(kernel) + filetimeDuration(user)
}

// filetimeDuration is a FILETIME that counts an interval (100 ns units),
// not an instant (Filetime.Nanoseconds takes it for one).
func filetimeDuration(ft windows.Filetime) time.Duration {
	return time.Duration(uint64(ft.HighDateTime)<<32|uint64(ft.LowDateTime)) * 100
}
