package config

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// javaDuration is java.time.Duration.parse's format (ISO-8601
// PnDTnHnMn.nS, letters in either case, each part signed).
var javaDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// ShareAutoOffsetReset parses a value of the group config
// share.auto.offset.reset as Kafka 4.4 does: "earliest", "latest" or
// "by_duration:<ISO-8601 duration>" (lower case; the duration's letters in
// either), not negative. byDuration says the last; ok false, that v is
// none of them.
func ShareAutoOffsetReset(v string) (earliest, byDuration bool, d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	switch {
	case v == "earliest":
		return true, false, 0, true
	case v == "latest":
		return false, false, 0, true
	case !strings.HasPrefix(v, "by_duration:"):
		return false, false, 0, false
	}
	d, ok = parseJavaDuration(v[len("by_duration:"):])
	if !ok || d < 0 {
		return false, false, 0, false
	}
	return false, true, d, true
}

// parseJavaDuration parses s as java.time.Duration.parse does; durations
// beyond time.Duration's range are refused.
func parseJavaDuration(s string) (time.Duration, bool) {
	m := javaDuration.FindStringSubmatch(s)
	if m == nil || m[3] == "T" || (m[2] == "" && m[3] == "") {
		return 0, false // "PT" and "P" name no part
	}
	var secs float64
	part := func(v string, unit float64) bool {
		if v == "" {
			return true
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		secs += float64(n) * unit
		return true
	}
	if !part(m[2], 86400) || !part(m[4], 3600) || !part(m[5], 60) || !part(m[6], 1) {
		return 0, false
	}
	if m[7] != "" {
		frac, _ := strconv.ParseFloat("0."+m[7], 64)
		if strings.HasPrefix(m[6], "-") {
			frac = -frac
		}
		secs += frac
	}
	if m[1] == "-" {
		secs = -secs
	}
	if math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}
