package protocol

import "sync/atomic"

// poisonByte fills a frame given back with PutFrame while poisoning is on.
const poisonByte = 0xA5

// poisonFrames, when set, makes PutFrame overwrite every buffer it is
// given, so that anything still reading a request after its frame was
// released reads garbage at once (a record count of -1515870811, a batch
// that fails its CRC) instead of, once in a while on a busy machine, a
// later request's bytes. On in binaries built with -race.
var poisonFrames atomic.Bool

// PoisonReleasedFrames turns the poisoning of released frames on or off
// and reports whether it was on. Tests use it to make a read after
// release fail every time; it costs a memset per request.
func PoisonReleasedFrames(on bool) (was bool) {
	return poisonFrames.Swap(on)
}
