package schemaregistry

import (
	"context"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

type clientUser struct {
	Name string `avro:"name"`
	Age  int    `avro:"age"`
}

// TestFranzGoClient_RegisterLookupSerde runs franz-go's sr.Client and
// sr.Serde against the registry: register, look up, read by id, and an Avro
// value encoded and decoded in Confluent's wire format.
func TestFranzGoClient_RegisterLookupSerde(t *testing.T) {
	s := newTestServer(t, nil)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(s.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: avroUserV2})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != 1 || ss.Version != 1 || ss.Subject != "users-value" {
		t.Fatalf("created %+v", ss)
	}
	looked, err := cl.LookupSchema(ctx, "users-value", sr.Schema{Schema: avroUserV2})
	if err != nil || looked.ID != 1 || looked.Version != 1 {
		t.Fatalf("lookup %+v %v", looked, err)
	}
	byID, err := cl.SchemaByID(ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	if byID.Type != sr.TypeAvro {
		t.Fatalf("type %v", byID.Type)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || len(subjects) != 1 || subjects[0] != "users-value" {
		t.Fatalf("subjects %v %v", subjects, err)
	}
	// An incompatible schema comes back as the registry's error.
	_, err = cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: avroUserV3})
	if re, ok := err.(*sr.ResponseError); !ok || re.ErrorCode != 409 {
		t.Fatalf("incompatible: %v", err)
	}

	schema, err := avro.Parse(byID.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(ss.ID, clientUser{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }),
	)
	b, err := serde.Encode(clientUser{Name: "ada", Age: 36})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || b[4] != 1 {
		t.Fatalf("wire header % x", b[:5])
	}
	var got clientUser
	if err := serde.Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if got != (clientUser{Name: "ada", Age: 36}) {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := cl.DeleteSubject(ctx, "users-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, "users-value", sr.HardDelete); err != nil {
		t.Fatal(err)
	}
}
