package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler is one API's entry in the registry: the versions Gregor handles
// and advertises, and the function that answers.
type handler struct {
	key      kmsg.Key
	min, max int16
	// acceptMin is the lowest version actually served; versions between
	// min and acceptMin are advertised only (Produce v0-v2, for librdkafka,
	// KAFKA-18659) and close the connection if used.
	acceptMin int16
	fn        func(*Broker, *request) (kmsg.Response, error)
	// async handlers may wait a long time (a JoinGroup or SyncGroup
	// parked during a rebalance): they run beside the connection's
	// in-order execution instead of holding it up. (A Fetch does its
	// first read in order and leaves only its long poll, via
	// request.wait.)
	async bool
	// coordinated handlers serve a group or a transactional id: in a
	// cluster only the coordinator takes them (NOT_COORDINATOR elsewhere).
	coordinated bool
	// hidden handlers are Gregor's own APIs (protocol.LinksKey), which
	// ApiVersions does not list.
	hidden bool
}

// handlers is the registry, filled by each API file's init. ApiVersions is
// built from it, so what is advertised is exactly what is handled.
var handlers = map[int16]handler{}

func register(key kmsg.Key, min, max int16, fn func(*Broker, *request) (kmsg.Response, error)) {
	if _, dup := handlers[int16(key)]; dup {
		panic("duplicate handler for " + key.Name())
	}
	handlers[int16(key)] = handler{key: key, min: min, max: max, acceptMin: min, fn: fn}
}

// runAsync marks key's handler as one that may wait (see handler.async).
func runAsync(keys ...kmsg.Key) {
	for _, key := range keys {
		h := handlers[int16(key)]
		h.async = true
		handlers[int16(key)] = h
	}
}

// advertiseFrom lowers the advertised minimum version of key without
// serving the versions below the registered minimum.
func advertiseFrom(key kmsg.Key, min int16) {
	h := handlers[int16(key)]
	h.min = min
	handlers[int16(key)] = h
}

// advertisedKeys returns the registry sorted by key.
func advertisedKeys() []handler {
	var hs []handler
	for _, h := range handlers {
		if !h.hidden {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b handler) int { return int(a.key) - int(b.key) })
	return hs
}

// coordinated marks keys as served by the group and transaction coordinator.
func coordinated(keys ...kmsg.Key) {
	for _, key := range keys {
		h := handlers[int16(key)]
		h.coordinated = true
		handlers[int16(key)] = h
	}
}
