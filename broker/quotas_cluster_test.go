package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/quota"
)

// TestCluster_ClientQuotasInEtcd alters quotas through one broker of a
// two-broker cluster: the other describes them and enforces them (its
// index has them) as its metadata watch delivers them, and a removal
// reaches it the same way.
func TestCluster_ClientQuotasInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, _ := startEtcdBrokers(t, 2, nil)
	c1, c2 := newClient(t, addrs[0]), newClient(t, addrs[1])
	if got := alterQuotas(t, c1, false, quotaEntry(quotaEnt("user=alice", "client-id"), "producer_byte_rate=4096", "request_percentage=12.5")); fmt.Sprint(got) != "[OK]" {
		t.Fatalf("alter: %q", got)
	}
	const want = "user=alice,client-id=<default> producer_byte_rate=4096,request_percentage=12.5"
	if got := describeQuotas(t, c1, false); got != want {
		t.Fatalf("broker 1 describes %q right after its alter", got)
	}
	waitFor(t, 10*time.Second, "broker 2 to describe and enforce the quota", func() bool {
		ix := brokers[1].quotas.Index()
		if ix == nil {
			return false
		}
		bound, ok := brokers[1].quotas.For(ix, "alice", "any-client").Bound(quota.Produce)
		return ok && bound == 4096 && describeQuotas(t, c2, true, "user=alice", "client-id") == want
	})
	if got := alterQuotas(t, c2, false, quotaEntry(quotaEnt("user=alice", "client-id"), "-producer_byte_rate", "-request_percentage")); fmt.Sprint(got) != "[OK]" {
		t.Fatalf("remove: %q", got)
	}
	waitFor(t, 10*time.Second, "broker 1 to drop the quota", func() bool {
		return brokers[0].quotas.Index() == nil && describeQuotas(t, c1, false) == ""
	})
}
