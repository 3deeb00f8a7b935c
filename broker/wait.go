package broker

import (
	"context"
	"time"
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
