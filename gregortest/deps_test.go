package gregortest

import (
	"os/exec"
	"strings"
	"testing"
)

// The single-node embedding links none of the cluster's machinery: no
// package cluster, no etcd, nothing that etcd alone brings (gRPC, zap,
// OpenTelemetry). A user's module that imports gregortest requires none of
// those modules and does not compile them.
func TestDepsLinkNoClusterStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/gregor-broker/gregor/cluster", "go.etcd.io/etcd/", "google.golang.org/grpc", "go.uber.org/zap", "go.opentelemetry.io/"} {
			if pkg == banned || strings.HasPrefix(pkg, banned) {
				t.Errorf("gregortest links %s", pkg)
			}
		}
	}
}
