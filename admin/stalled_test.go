package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsole_StoppedCommitting samples on a fake clock, 5 s apart, with
// N = 3 for both flags. Phase 1, four samples with 10 records produced
// before each: "paused" never commits past 4 (stopped committing, and its
// lag grows), "slow" commits 5 more each time (lag growing, not stopped),
// "done" keeps up (neither). Phase 2, four samples with nothing produced
// or committed: "paused" and "slow" have stopped committing with a steady
// lag (not growing).
func TestConsole_StoppedCommitting(t *testing.T) {
	b := gregortest.Start(t, gregortest.Topic("jobs", 1, nil))
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1, LagGrowingSamples: 3, StalledSamples: 3, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := testCtx(t)
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("jobs"))
	adm := kadm.NewClient(cl)
	commit := func(group string, at int64) {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "jobs", Partition: 0, At: at})
		if resp, err := adm.CommitOffsets(ctx, group, os); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", group, err, resp.Error())
		}
	}
	sample := func() {
		mu.Lock()
		now = now.Add(5 * time.Second)
		mu.Unlock()
		srv.Sample()
	}
	check := func(when string, stalled, growing []string) {
		t.Helper()
		if got := srv.Stalled(); !slices.Equal(got, stalled) {
			t.Fatalf("%s: Stalled = %v, want %v", when, got, stalled)
		}
		if got := srv.LagGrowing(); !slices.Equal(got, growing) {
			t.Fatalf("%s: LagGrowing = %v, want %v", when, got, growing)
		}
	}
	commit("paused", 4)
	for i := range int64(4) {
		var rs []*kgo.Record
		for range 10 {
			rs = append(rs, &kgo.Record{Value: []byte("job")})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		commit("slow", 5*(i+1))
		commit("done", 10*(i+1))
		sample()
		if i == 2 { // three samples: two intervals, not yet three
			check("after 3 samples", nil, nil)
		}
	}
	check("after phase 1", []string{"paused"}, []string{"paused", "slow"})
	for range 4 {
		sample()
	}
	check("after phase 2", []string{"paused", "slow"}, nil)

	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`gregor_group_stalled{group="done"} 0`, `gregor_group_stalled{group="paused"} 1`, `gregor_group_stalled{group="slow"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err = http.Get(hs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`<div id="stalled" class="flag-box"><span class="flag stalled">stopped committing</span> <a href="/groups/paused">paused</a> <a href="/groups/slow">slow</a> </div>`,
		`<a href="/groups/paused">paused</a> <span class="flag stalled">stopped committing</span></td>`,
		`<a href="/groups/done">done</a></td>`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("front page lacks %s\n%s", want, body)
		}
	}
}
