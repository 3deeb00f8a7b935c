//go:build race

package broker

// raceEnabled: the race detector allocates on its own account.
const raceEnabled = true
