package broker

import (
	"strconv"
	"testing"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/storage"
)

// TestWeekMs_MatchesPackageDefaults checks that the 7-day default the broker
// reports is the one storage and the coordinators apply.
func TestWeekMs_MatchesPackageDefaults(t *testing.T) {
	for name, v := range map[string]int64{
		"storage.DefaultRetentionMs":          storage.DefaultRetentionMs,
		"storage.DefaultSegmentMs":            storage.DefaultSegmentMs,
		"coordinator.DefaultTxnIDExpiration":  coordinator.DefaultTxnIDExpiration.Milliseconds(),
		"coordinator.DefaultOffsetsRetention": coordinator.DefaultOffsetsRetention.Milliseconds(),
	} {
		if got := strconv.FormatInt(v, 10); got != config.WeekMs {
			t.Errorf("%s = %s ms, config.WeekMs = %s", name, got, config.WeekMs)
		}
	}
}
