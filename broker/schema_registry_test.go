package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

type srUser struct {
	Name string `avro:"name"`
	Age  int    `avro:"age"`
}

const srUserSchema = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}`

// TestSchemaRegistry_RealClientThroughABroker: with
// schema.registry.listeners set, franz-go's sr client registers an Avro
// schema, a producer sends a value in Confluent's wire format and a
// consumer decodes it through the registry; _schemas holds Confluent's
// records; after a restart the schema is served with the same id and an
// incompatible one is still refused.
func TestSchemaRegistry_RealClientThroughABroker(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"schema.registry.listeners": "http://127.0.0.1:0"}
	b, addr := startBroker(t, dir, props)
	ctx := testCtx(t)
	url := "http://" + b.SchemaRegistryAddr().String()
	rcl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: srUserSchema})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != 1 || ss.Version != 1 {
		t.Fatalf("registered %+v, want id 1 version 1", ss)
	}
	schema := avro.MustParse(srUserSchema)
	var serde sr.Serde
	serde.Register(ss.ID, srUser{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	value, err := serde.Encode(srUser{Name: "ada", Age: 36})
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr, kgo.DefaultProduceTopic("users"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("users", schemasTopicName), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var user srUser
	var schemasKeys []string
	for user.Name == "" || len(schemasKeys) == 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch r.Topic {
			case "users":
				if err := serde.Decode(r.Value, &user); err != nil {
					t.Fatal(err)
				}
			case schemasTopicName:
				schemasKeys = append(schemasKeys, fmt.Sprintf("%d %s", r.Offset, r.Key))
			}
		})
	}
	if user != (srUser{Name: "ada", Age: 36}) {
		t.Fatalf("decoded %+v", user)
	}
	if want := `[0 {"keytype":"SCHEMA","subject":"users-value","version":1,"magic":1}]`; fmt.Sprint(schemasKeys) != want {
		t.Fatalf("_schemas holds %v, want %s", schemasKeys, want)
	}
	cl.Close()
	b.Close()

	b, _ = startBroker(t, dir, props)
	rcl, err = sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := rcl.SchemaByID(context.Background(), 1)
	if err != nil || got.Schema == "" {
		t.Fatalf("after a restart: schema 1: %+v %v", got, err)
	}
	again, err := rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: srUserSchema})
	if err != nil || again.ID != 1 || again.Version != 1 {
		t.Fatalf("after a restart, the same schema: %+v %v; want id 1 version 1", again, err)
	}
	_, err = rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`})
	if re, ok := err.(*sr.ResponseError); !ok || re.ErrorCode != 409 {
		t.Fatalf("after a restart, an incompatible schema: %v, want 409", err)
	}
}
