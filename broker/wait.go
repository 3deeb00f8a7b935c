package broker

import (
	"context"
	"time"

	"github.com/gregor-broker/gregor/storage"
)

// waitAny waits until one of chans is closed (true), or until d passes or
// ctx ends (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	woke := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	for _, ch := range chans {
		go func(ch <-chan struct{}) {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}(ch)
	}
	select {
	case <-woke:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// logWake is a log a long poll waits on, with the channel of its Notify
// taken before the read that found nothing.
type logWake struct {
	log *storage.Log
	ch  <-chan struct{}
}

// waitLogs waits until one of the logs advances after its channel was
// taken (true), or until d passes or ctx ends (false). Unlike waitAny it
// costs no goroutine per log: a follower's Fetch names every partition it
// replicates from this leader, thousands in a big cluster, twice a second
// when idle. One storage.Waiter is added to every log, then the channels
// are checked for an advance that came before it was added.
func waitLogs(ctx context.Context, wake []logWake, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	if len(wake) == 1 {
		select {
		case <-wake[0].ch:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	w := storage.NewWaiter()
	for _, lw := range wake {
		lw.log.Wait(w)
	}
	defer func() {
		for _, lw := range wake {
			lw.log.Unwait(w)
		}
	}()
	for _, lw := range wake {
		select {
		case <-lw.ch:
			return true
		default:
		}
	}
	select {
	case <-w.C():
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}
