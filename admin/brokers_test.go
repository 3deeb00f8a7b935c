package admin_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrokers_DiskColumn: on one node, /brokers shows the data directory
// and the bytes of its partitions' segment files, exactly the sizes
// DescribeLogDirs reports (and the topic pages add up), and the file
// system's usage; /metrics has the same size in gregor_log_dir_size_bytes
// and no under-replicated, offline or reassigning partition.
func TestBrokers_DiskColumn(t *testing.T) {
	b := gregortest.Start(t, gregortest.Topic("disk", 3, nil))
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var rs []*kgo.Record
	for i := range 90 {
		rs = append(rs, &kgo.Record{Topic: "disk", Partition: int32(i % 3), Value: []byte(strings.Repeat("x", 100+i))})
	}
	if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	var want int64
	for _, tp := range b.Broker.Topics() {
		for _, p := range tp.Partitions {
			want += p.SizeBytes
		}
	}
	if want <= 90*100 {
		t.Fatalf("partitions hold %d bytes, want more than the values' 9000", want)
	}
	dirs := b.Broker.LogDirs(testCtx(t))
	abs, _ := filepath.Abs(b.DataDir())
	if len(dirs) != 1 || dirs[0].SizeBytes != want || dirs[0].Partitions != 3 || dirs[0].Dir != abs || dirs[0].TotalBytes <= 0 || dirs[0].UsableBytes < 0 || dirs[0].Err != "" {
		t.Fatalf("LogDirs = %+v, want one dir %s of %d bytes in 3 partitions", dirs, abs, want)
	}
	code, body := get(t, hs.URL+"/brokers")
	if code != 200 {
		t.Fatalf("/brokers: %d %s", code, body)
	}
	id := b.Broker.ClusterInfo().Brokers[0].ID
	re := regexp.MustCompile(fmt.Sprintf(`(?s)<tr class="broker" data-broker="%d">.*?<td><code>%s</code></td>\s*<td class="num disk-used" data-bytes="(\d+)" data-partitions="3">([^<]+) <span class="muted">\(3 partitions\)</span></td>\s*<td class="num fs-used">[\d.]+%%</td>\s*<td class="num fs-free" data-bytes="(\d+)">`,
		id, regexp.QuoteMeta(abs)))
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no disk column for broker %d:\n%s", id, body)
	}
	if m[1] != strconv.FormatInt(want, 10) {
		t.Fatalf("disk used %s bytes, want %d", m[1], want)
	}
	if want >= 1024 && !strings.HasSuffix(m[2], "KiB") {
		t.Fatalf("disk used shown as %q", m[2])
	}
	if !strings.Contains(body, `<span id="reassigning-count">0</span> reassignments in progress`) || !strings.Contains(body, `<tr><td colspan="6" class="muted">None.</td></tr>`) {
		t.Fatalf("reassignments:\n%s", body)
	}

	mfs := scrapeURL(t, hs.URL+"/metrics")
	if v := value(mfs, "gregor_log_dir_size_bytes", "dir", abs); v != float64(want) {
		t.Fatalf("gregor_log_dir_size_bytes = %v, want %d", v, want)
	}
	for name, w := range map[string]float64{"gregor_under_replicated_partitions": 0, "gregor_offline_partitions": 0, "gregor_reassigning_partitions": 0, "gregor_cluster_brokers": 1} {
		if v := value(mfs, name); v != w {
			t.Errorf("%s = %v, want %v", name, v, w)
		}
	}
}
