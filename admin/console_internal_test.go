package admin

import "testing"

func TestRetention_HumanUnits(t *testing.T) {
	for _, c := range []struct {
		ms, bytes int64
		want      string
	}{
		{604_800_000, -1, "7 d"},
		{129_600_000, -1, "36 h"},
		{5_400_000, -1, "90 min"},
		{90_000, -1, "90 s"},
		{1500, -1, "1500 ms"},
		{0, -1, "0 ms"},
		{-1, -1, "forever"},
		{-1, 1 << 30, "forever, ≤ 1.0 GiB"},
		{86_400_000, 512, "1 d, ≤ 512 B"},
	} {
		if got := retention(c.ms, c.bytes); got != c.want {
			t.Errorf("retention(%d, %d) = %q, want %q", c.ms, c.bytes, got, c.want)
		}
	}
}
