package admin_test

import (
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/gregortest/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsole_ClusterWide: in a three-broker cluster, node 1's console
// lists every group, not only the ones node 1 coordinates, each with the
// offsets committed at its coordinator and the lag against high
// watermarks asked of the partitions' leaders (a topic of replication
// factor 1, so two of its three partitions have no replica on node 1);
// the page of a group coordinated elsewhere answers 200 with them. The
// topic's page lists all three partitions with leader, replicas, ISR and
// the log start and high watermark of each. Once broker 3 is stopped,
// /brokers lists it as DOWN and every page has the health line. While
// broker 2 drops ListGroups, / still answers 200 with the other groups
// and says broker 2 could not be asked.
func TestConsole_ClusterWide(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := testCtx(t)
	cl := newClient(t, c.Node(1).Addr(), kgo.SeedBrokers(c.Seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for p := range int32(3) {
		for i := range 10 {
			rs = append(rs, &kgo.Record{Topic: "events", Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Group g<i> commits offset i%4+1 in every partition: lag 9-i%4 each.
	var groups []string
	for i := range 9 {
		g := fmt.Sprintf("g%d", i)
		groups = append(groups, g)
		var offs kadm.Offsets
		for p := range int32(3) {
			offs.Add(kadm.Offset{Topic: "events", Partition: p, At: int64(i%4 + 1), LeaderEpoch: -1})
		}
		if _, err := adm.CommitOffsets(ctx, g, offs); err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	coords := adm.FindGroupCoordinators(ctx, groups...)
	if err := coords.Error(); err != nil {
		t.Fatal(err)
	}
	elsewhere := ""
	local := 0
	for _, g := range groups {
		if coords[g].NodeID == 1 {
			local++
		} else if elsewhere == "" {
			elsewhere = g
		}
	}
	if elsewhere == "" {
		t.Fatal("node 1 coordinates every group; the test needs one coordinated elsewhere")
	}
	if leaders := []int32{c.LeaderOf("events", 0), c.LeaderOf("events", 1), c.LeaderOf("events", 2)}; !hasOther(leaders, 1) {
		t.Fatalf("node 1 leads every partition of events (%v)", leaders)
	}
	if got := len(c.Node(1).Groups()); got != local {
		t.Fatalf("node 1's own Groups() = %d, want the %d it coordinates", got, local)
	}

	srv, err := admin.New(c.Node(1).Broker, admin.Options{SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	code, body := get(t, hs.URL+"/")
	if code != 200 {
		t.Fatalf("/: %d %s", code, body)
	}
	if strings.Contains(body, `id="unreached"`) {
		t.Fatalf("/ could not reach every broker:\n%s", body)
	}
	for i, g := range groups {
		lag := 3 * (10 - (i%4 + 1))
		re := regexp.MustCompile(fmt.Sprintf(`<tr data-group="%s"><td><a href="/groups/%s">%s</a></td><td>Empty</td><td class="num">0</td><td class="num">%d</td>`, g, g, g, lag))
		if !re.MatchString(body) {
			t.Errorf("/ has no row for %s (coordinator %d) with total lag %d", g, coords[g].NodeID, lag)
		}
	}
	if t.Failed() {
		t.Fatalf("/:\n%s", body)
	}

	code, body = get(t, hs.URL+"/groups/"+elsewhere)
	if code != 200 {
		t.Fatalf("/groups/%s (coordinator %d): %d %s", elsewhere, coords[elsewhere].NodeID, code, body)
	}
	var i int
	fmt.Sscanf(elsewhere, "g%d", &i)
	for p := range 3 {
		row := fmt.Sprintf(`<tr><td>events</td><td class="num">%d</td><td class="num">%d</td><td class="num">10</td><td class="num lag">%d</td>`, p, i%4+1, 10-(i%4+1))
		if !strings.Contains(body, row) {
			t.Errorf("/groups/%s has no row %s", elsewhere, row)
		}
	}
	if t.Failed() {
		t.Fatalf("/groups/%s:\n%s", elsewhere, body)
	}
	// The same page rendered by a browser (headless Chromium): the DOM
	// carries the group's lag, fetched from its coordinator elsewhere.
	dom := runChromium(t, chromium(t), hs.URL+"/groups/"+elsewhere, "--dump-dom")
	if want := fmt.Sprintf(`id="total-lag">%d<`, 3*(10-(i%4+1))); !strings.Contains(dom, want) {
		t.Errorf("Chromium's DOM of /groups/%s lacks %s", elsewhere, want)
	}
	for p := range 3 {
		if want := fmt.Sprintf(`data-partition="events-%d" data-lag="%d"`, p, 10-(i%4+1)); !strings.Contains(dom, want) {
			t.Errorf("Chromium's DOM of /groups/%s lacks %s", elsewhere, want)
		}
	}
	if t.Failed() {
		t.Fatalf("Chromium's DOM of /groups/%s:\n%s", elsewhere, dom)
	}
	if code, body := get(t, hs.URL+"/groups/nosuch"); code != 404 {
		t.Fatalf("/groups/nosuch: %d %s", code, body)
	}

	// The topic page lists every partition with its leadership and the
	// offsets, asked of the leader where node 1 has no replica.
	code, body = get(t, hs.URL+"/topics/events")
	if code != 200 {
		t.Fatalf("/topics/events: %d %s", code, body)
	}
	for p := range int32(3) {
		l := c.LeaderOf("events", p)
		row := fmt.Sprintf(`<tr class="partition" data-partition="%d"><td class="num">%d</td>
<td class="num leader">%d</td><td class="replicas">%d</td><td class="isr">%d</td><td class="offline-replicas"></td>
<td class="num log-start">0</td><td class="num hw">10</td>`, p, p, l, l, l)
		if !strings.Contains(body, row) {
			t.Errorf("/topics/events has no row\n%s", row)
		}
		// Browsing reads a local replica, else fetches from the leader:
		// every partition shows its own records from node 1.
		code, page := get(t, fmt.Sprintf("%s/topics/events/%d?order=oldest", hs.URL, p))
		if code != 200 || !strings.Contains(page, fmt.Sprintf("%d-9", p)) || !strings.Contains(page, fmt.Sprintf("%d-0", p)) {
			t.Errorf("browsing events-%d (leader %d) on node 1: %d %s", p, l, code, page)
		}
	}
	if t.Failed() {
		t.Fatalf("/topics/events:\n%s", body)
	}
	code, body = get(t, hs.URL+"/")
	if re := regexp.MustCompile(`<a href="/topics/events">events</a></td><td class="num">3</td>\s*<td class="num">30</td>`); code != 200 || !re.MatchString(body) {
		t.Fatalf("/ does not list events with 3 partitions and 30 records: %d\n%s", code, body)
	}
	if strings.Contains(body, `id="health"`) {
		t.Fatalf("/ shows a health line with every broker up:\n%s", body)
	}

	// The history is the cluster's too: two samples around 2 records more
	// in each partition and a commit one further by the group coordinated
	// elsewhere give its lag and committed offsets as its coordinator and
	// the leaders have them, and the topic's records in from its high
	// watermarks; the pages say whose bytes the byte charts count.
	srv.Sample()
	rs = rs[:0]
	for p := range int32(3) {
		for j := range 2 {
			rs = append(rs, &kgo.Record{Topic: "events", Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, 10+j)})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: "events", Partition: p, At: int64(i%4 + 2), LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, elsewhere, offs); err != nil {
		t.Fatal(err)
	}
	srv.Sample()
	last2 := func(name string) (vals []float64, dt float64) {
		vs, ts := srv.History().Values(name)
		if len(vs) < 2 {
			t.Fatalf("history %s: %d samples", name, len(vs))
		}
		return vs[len(vs)-2:], ts[len(ts)-1].Sub(ts[len(ts)-2]).Seconds()
	}
	if lag, _ := last2("group_lag/" + elsewhere); lag[0] != float64(3*(10-(i%4+1))) || lag[1] != float64(3*(12-(i%4+2))) {
		t.Errorf("history of %s's lag (coordinator %d): %v, want [%d %d]", elsewhere, coords[elsewhere].NodeID, lag, 3*(10-(i%4+1)), 3*(12-(i%4+2)))
	}
	if committed, _ := last2("committed/" + elsewhere); committed[0] != float64(3*(i%4+1)) || committed[1] != float64(3*(i%4+2)) {
		t.Errorf("history of %s's committed offsets: %v, want [%d %d]", elsewhere, committed, 3*(i%4+1), 3*(i%4+2))
	}
	if in, dt := last2("records_in/events"); math.Abs(in[1]*dt-6) > 1e-3 {
		t.Errorf("history of events' records in: %v over %.3f s (%.3f records), want 6 records", in, dt, in[1]*dt)
	}
	if _, body := get(t, hs.URL+"/"); !strings.Contains(body, "<th>Records in</th>") {
		t.Errorf("/ in a cluster does not head the topics' throughput column Records in:\n%s", body)
	}
	if _, body := get(t, hs.URL+"/topics/events"); !strings.Contains(body, "Bytes in (partitions led by this broker)") {
		t.Errorf("/topics/events in a cluster does not say whose bytes its chart counts:\n%s", body)
	}
	if t.Failed() {
		t.FailNow()
	}

	// A broker that does not answer is listed, and the page shows the
	// groups of the others.
	id, err := c.Node(2).InjectFault(broker.Fault{APIKey: int16(kmsg.ListGroups), Partition: -1, DropConnection: true})
	if err != nil {
		t.Fatal(err)
	}
	code, body = get(t, hs.URL+"/")
	c.Node(2).ClearFaults(id)
	if code != 200 || !regexp.MustCompile(`<div id="unreached" class="err">.*<li>broker 2: ListGroups: [^<]+</li>`).MatchString(body) {
		t.Fatalf("/ with broker 2 dropping ListGroups does not say so: %d\n%s", code, body)
	}
	for _, g := range groups {
		if listed := strings.Contains(body, fmt.Sprintf(`<tr data-group="%s">`, g)); listed != (coords[g].NodeID != 2) {
			t.Errorf("/ with broker 2 unreachable: group %s (coordinator %d) listed: %v", g, coords[g].NodeID, listed)
		}
	}
	if t.Failed() {
		t.Fatalf("/:\n%s", body)
	}

	// A stopped broker stays on /brokers, as DOWN, and every page says so.
	leaders := []int32{c.LeaderOf("events", 0), c.LeaderOf("events", 1), c.LeaderOf("events", 2)}
	c.Stop(3)
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(c.Node(1).ClusterInfo().Down, 3) {
		if time.Now().After(deadline) {
			t.Fatalf("node 1 does not see broker 3 down: %+v", c.Node(1).ClusterInfo())
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, body = get(t, hs.URL+"/brokers")
	if code != 200 {
		t.Fatalf("/brokers: %d %s", code, body)
	}
	for id, state := range map[int32]string{1: "UP", 2: "UP", 3: `<span class="flag">DOWN</span>`} {
		class := "broker"
		if id == 3 {
			class = "broker down"
		}
		if !regexp.MustCompile(fmt.Sprintf(`<tr class="%s" data-broker="%d"><td class="num">%d</td><td>[^<]*</td><td class="state">%s</td>`, class, id, id, regexp.QuoteMeta(state))).MatchString(body) {
			t.Errorf("/brokers: broker %d is not shown %s", id, state)
		}
	}
	if !regexp.MustCompile(`<div id="health" class="health"><a href="/brokers">\d+ under-replicated, \d+ offline partitions, 1 brokers down</a></div>`).MatchString(body) {
		t.Errorf("/brokers has no health line with 1 broker down")
	}
	if t.Failed() {
		t.Fatalf("/brokers:\n%s", body)
	}
	// The topic page too, with broker 3's partitions (replication factor
	// 1) offline.
	code, body = get(t, hs.URL+"/topics/events")
	if code != 200 || !strings.Contains(body, "1 brokers down") {
		t.Fatalf("/topics/events has no health line: %d\n%s", code, body)
	}
	for p, l := range leaders {
		if l == 3 && !strings.Contains(body, fmt.Sprintf(`<tr class="partition offline" data-partition="%d">`, p)) {
			t.Fatalf("/topics/events: partition %d of stopped broker 3 is not offline:\n%s", p, body)
		}
	}
}

func hasOther(ids []int32, id int32) bool {
	for _, x := range ids {
		if x != id {
			return true
		}
	}
	return false
}
