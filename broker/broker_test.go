package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startBroker runs a broker on a random loopback port with a temporary data
// directory; it is closed when the test ends.
func startBroker(t testing.TB, dir string, props map[string]string) (*Broker, string) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GREGOR_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Props: props, Logger: log, JoinCluster: joinEtcd})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := b.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve()
	t.Cleanup(func() { b.Close() })
	return b, addr.String()
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test with what after
// timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// rawConn speaks the wire protocol directly, for requests no client would
// send.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t, nc}
}

// testFormatter writes request frames as a client does: size prefix, then
// header v1, or v2 for flexible versions.
var testFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))

// send writes a request with header v1/v2 as the version requires.
func (c *rawConn) send(corr int32, req kmsg.Request) {
	c.sendFrame(testFormatter.AppendRequest(nil, req, corr))
}

// sendFrame writes frame, size prefix included, as it is.
func (c *rawConn) sendFrame(frame []byte) {
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one response into resp, checking the correlation id.
func (c *rawConn) recv(corr int32, resp kmsg.Response) {
	c.t.Helper()
	n, err := protocol.ReadFrameSize(c.nc, 100<<20)
	if err != nil {
		c.t.Fatalf("read response size: %v", err)
	}
	frame, err := protocol.ReadFrameInto(c.nc, n)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T: %v", resp, err)
	}
}

// roundTrip sends req with correlation id corr and reads its answer, of
// the request's version.
func roundTrip[R kmsg.Response](c *rawConn, corr int32, req kmsg.Request) R {
	c.t.Helper()
	c.send(corr, req)
	resp := req.ResponseKind().(R)
	resp.SetVersion(req.GetVersion())
	c.recv(corr, resp)
	return resp
}

// expectClosed asserts the broker closes the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("connection still open")
		}
	}
}

func TestApiVersions_AdvertisesRegistry(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	c := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1.0"
	c.send(1, req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	c.recv(1, resp)
	if resp.ErrorCode != 0 {
		t.Fatalf("error %d", resp.ErrorCode)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if len(got) != len(advertisedKeys()) {
		t.Fatalf("advertised %d keys, registry has %d", len(got), len(advertisedKeys()))
	}
	if got[int16(kmsg.Produce)] != [2]int16{0, 12} || got[int16(kmsg.Fetch)] != [2]int16{4, 17} || got[int16(kmsg.Metadata)] != [2]int16{0, 13} {
		t.Fatalf("unexpected ranges %v", got)
	}
}

func TestApiVersions_UnsupportedVersionAnswersV0(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	c := dialRaw(t, addr)
	// A future version, whose body the broker cannot know how to parse: it
	// must still answer v0 with UNSUPPORTED_VERSION and its ranges.
	future := kmsg.NewPtrApiVersionsRequest()
	future.Version = 99
	c.send(7, future)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	c.recv(7, resp)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(advertisedKeys()) {
		t.Fatalf("got error %d with %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	// The connection stays usable.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	c.send(8, req)
	c.recv(8, resp)
	if resp.ErrorCode != 0 {
		t.Fatalf("retry got error %d", resp.ErrorCode)
	}
}

func TestServer_UnknownKeyClosesConnection(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	c := dialRaw(t, addr)
	// An ApiVersions v0 frame with its key (after the size prefix) changed
	// to one no API has.
	unknown := testFormatter.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	binary.BigEndian.PutUint16(unknown[4:], 9999)
	c.sendFrame(unknown)
	c.expectClosed()
	// A known key at an unsupported version closes too (Fetch v3).
	c = dialRaw(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 3
	c.send(1, req)
	c.expectClosed()
	// Produce v2 is advertised (for librdkafka) but not served.
	c = dialRaw(t, addr)
	preq := kmsg.NewPtrProduceRequest()
	preq.Version = 2
	c.send(1, preq)
	c.expectClosed()
}

func TestServer_OversizeAndNegativeFramesClose(t *testing.T) {
	_, addr := startBroker(t, "", map[string]string{"socket.request.max.bytes": "1024"})
	// Too large, negative, and empty (no room for a header).
	for _, size := range []uint32{2048, 0xffffffff, 0} {
		c := dialRaw(t, addr)
		c.nc.Write(binary.BigEndian.AppendUint32(nil, size))
		c.expectClosed()
	}
	// Garbage after a valid header: malformed body closes the connection.
	c := dialRaw(t, addr)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	md.Topics = []kmsg.MetadataRequestTopic{} // the body is the topic count
	garbage := testFormatter.AppendRequest(nil, md, 1)
	binary.BigEndian.PutUint32(garbage[len(garbage)-4:], 1<<31-1) // 2^31-1 topics
	c.sendFrame(garbage)
	c.expectClosed()
	// The broker still serves others.
	cl := newClient(t, addr)
	if _, err := cl.Request(testCtx(t), kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatal(err)
	}
}

// TestServer_ResponsesInRequestOrder pipelines a long-polling Fetch and an
// ApiVersions: the second is answered after the first (order), but it was
// read and handled while the fetch waited.
func TestServer_ResponsesInRequestOrder(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	if _, err := b.createTopic("order", 1, nil); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 11
	fetch.MaxWaitMillis = 400
	fetch.MinBytes = 1
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "order"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	start := time.Now()
	c.send(1, fetch)
	av := kmsg.NewPtrApiVersionsRequest()
	c.send(2, av)
	fresp := kmsg.NewPtrFetchResponse()
	fresp.Version = 11
	c.recv(1, fresp)
	if waited := time.Since(start); waited < 350*time.Millisecond {
		t.Fatalf("fetch answered after %v, before max wait", waited)
	}
	avresp := kmsg.NewPtrApiVersionsResponse()
	c.recv(2, avresp)
	if fresp.Topics[0].Partitions[0].ErrorCode != 0 || fresp.Topics[0].Partitions[0].HighWatermark != 0 {
		t.Fatalf("fetch: %+v", fresp.Topics[0].Partitions[0])
	}
}

func TestFetch_LongPollWokenByProduce(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	if _, err := b.createTopic("wake", 1, nil); err != nil {
		t.Fatal(err)
	}
	// A fault that changes nothing, to count the Fetch requests dispatched.
	probe, err := b.InjectFault(Fault{APIKey: int16(kmsg.Fetch), Topic: "wake", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"wake": {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(5*time.Second))
	prod := newClient(t, addr)
	ctx := testCtx(t)
	produced := make(chan error, 1)
	go func() {
		// Produce once the consumer's first Fetch has reached its handler.
		for dispatched := false; !dispatched; {
			for _, f := range b.Faults() {
				dispatched = dispatched || f.ID == probe && f.Hits > 0
			}
			if ctx.Err() != nil {
				produced <- ctx.Err()
				return
			}
			time.Sleep(time.Millisecond)
		}
		produced <- prod.ProduceSync(ctx, &kgo.Record{Topic: "wake", Value: []byte("hello")}).FirstErr()
	}()
	start := time.Now()
	fs := cons.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "hello" || recs[0].Offset != 0 {
		t.Fatalf("got %v", recs)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("long poll not woken by the append: %v", el)
	}
	if err := <-produced; err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// A long poll over many partitions (a follower's Fetch names every
// partition it replicates from the leader) waits without a goroutine per
// partition, is woken by an append to any one of them, and leaves nothing
// on the partitions' logs.
func TestFetch_LongPollOverManyPartitions(t *testing.T) {
	const n = 1000
	b, addr := startBroker(t, "", nil)
	tp, err := b.createTopic("many", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := b.partitionsOf(tp)
	c := dialRaw(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 11
	fetch.MaxWaitMillis = 30000
	fetch.MinBytes = 1
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "many"
	for i := range n {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = int32(i)
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	before := runtime.NumGoroutine()
	start := time.Now()
	c.send(1, fetch)
	ctx := testCtx(t)
	// Waiting: on the logs, or (as before) a goroutine per partition.
	for parts[n-1].log.Waiters() == 0 && runtime.NumGoroutine()-before < n/2 {
		if ctx.Err() != nil {
			t.Fatal("the fetch never waited on the last partition")
		}
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g-before > 50 {
		t.Fatalf("%d goroutines while one fetch of %d partitions waits (%d before)", g, n, before)
	}
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "many", Partition: n - 1, Value: []byte("last")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	c.recv(1, resp)
	if el := time.Since(start); el > 20*time.Second {
		t.Fatalf("answered after %v: not woken by the append", el)
	}
	var with []int32
	for _, p := range resp.Topics[0].Partitions {
		if len(p.RecordBatches) > 0 {
			with = append(with, p.Partition)
		}
	}
	if !slices.Equal(with, []int32{n - 1}) {
		t.Fatalf("records in partitions %v, want [%d]", with, n-1)
	}
	for i, p := range parts {
		if w := p.log.Waiters(); w != 0 {
			t.Fatalf("partition %d keeps %d waiters after the answer", i, w)
		}
	}
}

func apiVersionsReq() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return req
}

// TestApiVersions_Features: v4 lists every supported feature and the
// finalized ones above level 0; v3 leaves out supported ranges starting at
// 0, as Kafka 4.4 answers (KAFKA-17011).
func TestApiVersions_Features(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	c := dialRaw(t, addr)
	for _, v := range []int16{3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "test", "1"
		c.send(int32(v), req)
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.Version = v
		c.recv(int32(v), resp)
		var sup, fin []string
		for _, f := range resp.SupportedFeatures {
			sup = append(sup, fmt.Sprintf("%s %d-%d", f.Name, f.MinVersion, f.MaxVersion))
		}
		for _, f := range resp.FinalizedFeatures {
			fin = append(fin, fmt.Sprintf("%s %d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel))
		}
		wantSup := "[eligible.leader.replicas.version 0-0 group.version 0-1 kraft.version 0-0 metadata.version 7-33 share.version 0-2 streams.version 0-1 transaction.version 0-2]"
		if v == 3 {
			wantSup = "[metadata.version 7-33]"
		}
		if got := fmt.Sprint(sup); got != wantSup {
			t.Errorf("v%d supported %s, want %s", v, got, wantSup)
		}
		if got, want := fmt.Sprint(fin), "[group.version 1-1 metadata.version 33-33 share.version 2-2 streams.version 1-1]"; got != want {
			t.Errorf("v%d finalized %s, want %s", v, got, want)
		}
		if resp.FinalizedFeaturesEpoch < 0 {
			t.Errorf("v%d finalized features epoch %d", v, resp.FinalizedFeaturesEpoch)
		}
	}
}
