package cluster

import (
	"strconv"
	"time"
)

func memberName(v Voter) string { return "gregor-" + strconv.Itoa(int(v.NodeID)) }

// unsafeNoFsync turns off etcd's fsync (tests only).
var unsafeNoFsync bool

func ttlSeconds(c *Config) int64 {
	d := c.SessionTimeout
	if d <= 0 {
		d = DefaultSessionTimeout
	}
	s := int64((d + time.Second - 1) / time.Second)
	if s < 2 {
		s = 2
	}
	return s
}

func voterOf(c *Config) (Voter, bool) {
	for _, v := range c.Voters {
		if v.NodeID == c.NodeID {
			return v, true
		}
	}
	return Voter{}, false
}
