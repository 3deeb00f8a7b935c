package gregortest

import (
	"os/exec"
	"strings"
	"testing"
)

// The single-node embedding links none of the cluster's machinery: no
// package cluster, no etcd, nothing that etcd alone brings (gRPC, zap,
// OpenTelemetry). A user's module that imports gregortest requires none of
// those modules and does not compile them. The exception is OTLP's data
// model (go.opentelemetry.io/proto/otlp/{common,resource,metrics}/v1,
// generated protobuf types that import only google.golang.org/protobuf),
// which package clientmetrics decodes KIP-714 pushes with; OTLP's
// collector (gRPC) packages and OpenTelemetry's SDK stay banned.
func TestDepsLinkNoClusterStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"go.opentelemetry.io/proto/otlp/common/v1":   true,
		"go.opentelemetry.io/proto/otlp/resource/v1": true,
		"go.opentelemetry.io/proto/otlp/metrics/v1":  true,
	}
	for _, pkg := range strings.Fields(string(out)) {
		if allowed[pkg] {
			continue
		}
		for _, banned := range []string{"github.com/gregor-broker/gregor/cluster", "go.etcd.io/etcd/", "google.golang.org/grpc", "go.uber.org/zap", "go.opentelemetry.io/"} {
			if pkg == banned || strings.HasPrefix(pkg, banned) {
				t.Errorf("gregortest links %s", pkg)
			}
		}
	}
}
