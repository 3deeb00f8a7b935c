package link

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/metastore"
)

func memStore(t *testing.T) *Store {
	t.Helper()
	f, err := metastore.OpenFile(metastore.FileConfig{}) // in memory
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(f)
}

func TestStore_LinksMirrorsGroupsAndDelete(t *testing.T) {
	ctx := context.Background()
	s := memStore(t)
	l := &Link{Name: "mig", Source: []string{"127.0.0.1:9092"}, Topics: "orders|pay.*", Groups: "g.*"}
	if err := s.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, l); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	for _, bad := range []*Link{
		{Name: "a/b", Source: []string{"h:1"}, Topics: "x"},
		{Name: "x", Topics: "x"},
		{Name: "x", Source: []string{"nohostport"}, Topics: "x"},
		{Name: "x", Source: []string{"h:1"}, Topics: "("},
		{Name: "x", Source: []string{"h:1"}, Topics: "x", SourceConfig: map[string]string{"security.protocol": "SASL_PLAINTEXT"}},
		{Name: "x", Source: []string{"h:1"}, Topics: "x", SourceConfig: map[string]string{"security.protocol": "KERBEROS"}},
	} {
		if err := s.Create(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("create %+v: %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.PutMirror(ctx, &Mirror{Link: "mig", Topic: "orders", State: Mirroring}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutGroup(ctx, &GroupSync{Link: "mig", Group: "g/1", Offsets: map[string]map[int32]int64{"orders": {0: 5}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseProducerIDFloor(ctx, 2, 41); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseProducerIDFloor(ctx, 1, 40); err != nil { // below the floor: nothing written
		t.Fatal(err)
	}
	st := s.State()
	if st.Links["mig"] == nil || st.Mirrors["orders"].State != Mirroring || st.Groups["mig"]["g/1"].Offsets["orders"][0] != 5 || st.ProducerIDFloor != 41 {
		t.Fatalf("state: %+v", st)
	}
	if !st.topics["mig"].MatchString("payments") || st.topics["mig"].MatchString("xorders") {
		t.Fatal("topics pattern is not matched against whole names")
	}
	if got := s.ReadOnly("orders"); got != "mig" {
		t.Fatalf("ReadOnly(orders) = %q", got)
	}
	if err := s.Delete(ctx, "mig", false); !errors.Is(err, ErrActiveMirrors) {
		t.Fatalf("delete with a mirror: %v", err)
	}
	if err := s.Delete(ctx, "mig", true); err != nil {
		t.Fatal(err)
	}
	st = s.State()
	if len(st.Links) != 0 || len(st.Mirrors) != 0 || len(st.Groups) != 0 || st.ProducerIDFloor != 41 || s.ReadOnly("orders") != "" {
		t.Fatalf("after delete: %+v", st)
	}
	if err := s.Delete(ctx, "mig", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
}

func TestMaxProducerID(t *testing.T) {
	batch := func(pid int64, records int) []byte {
		b := make([]byte, 61+records)
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		binary.BigEndian.PutUint64(b[43:], uint64(pid))
		return b
	}
	recs := append(append(batch(7, 3), batch(-1, 0)...), batch(12, 1)...)
	if pid, n := maxProducerID(recs); pid != 12 || n != 3 {
		t.Fatalf("got %d over %d batches", pid, n)
	}
	// A truncated batch at the end (a fetch's last) is not counted.
	if pid, n := maxProducerID(append(batch(3, 0), batch(99, 5)[:40]...)); pid != 3 || n != 1 {
		t.Fatalf("with a truncated batch: %d over %d", pid, n)
	}
}

func TestSourceOptions_SCRAM(t *testing.T) {
	jaas := `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p=1";`
	if _, err := sourceOptions(&Link{Source: []string{"h:1"}, SourceConfig: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sourceOptions(&Link{Source: []string{"h:1"}, SourceConfig: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI", "sasl.jaas.config": jaas}}); err == nil {
		t.Fatal("GSSAPI accepted")
	}
}
