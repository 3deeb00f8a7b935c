package compat

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// TestClusterSchemaRegistryKill: three real gregor processes, each serving
// the schema registry. A schema registered through node 1 is served by
// node 3 at once; kill -9 of the leader of _schemas-0 leaves registration
// working through either survivor, with the next ids and no id given
// twice; the killed node, restarted, serves every schema and gives an
// existing schema its id again.
func TestClusterSchemaRegistryKill(t *testing.T) {
	ports := freePorts(t, 3)
	var opts []clusterOpt
	for i, p := range ports {
		opts = append(opts, withNodeSet(int32(i+1), fmt.Sprintf("schema.registry.listeners=http://127.0.0.1:%d", p)))
	}
	c := startCluster(t, 3, opts...)
	ctx := testCtx(t, 3*time.Minute)
	client := func(id int32) *sr.Client {
		t.Helper()
		cl, err := sr.NewClient(sr.URLs(fmt.Sprintf("http://127.0.0.1:%d", ports[id-1])))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	schemaOf := func(field string) sr.Schema {
		return sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"` + field + `","type":"string"}]}`}
	}

	first, err := client(1).CreateSchema(ctx, "first-value", schemaOf("a"))
	if err != nil || first.ID != 1 || first.Version != 1 {
		t.Fatalf("register through node 1: %+v %v; want id 1 version 1", first, err)
	}
	// The text as registered through node 1 (the registry's canonical form).
	text := func(id int32, schemaID int) (string, error) {
		got, err := client(id).SchemaByID(ctx, schemaID)
		return got.Schema, err
	}
	want1, err := text(1, 1)
	if err != nil || !strings.Contains(want1, `"a"`) {
		t.Fatalf("schema 1 through node 1: %q %v", want1, err)
	}
	if got, err := text(3, 1); err != nil || got != want1 {
		t.Fatalf("schema 1 through node 3 right after its registration: %q %v; want %q", got, err, want1)
	}

	leader := c.WaitLeader("_schemas", 0)
	c.Node(leader).Kill()
	var survivors []int32
	for _, nd := range c.Nodes() {
		if nd.ID() != leader {
			survivors = append(survivors, nd.ID())
		}
	}
	// Each survivor registers a schema of its own: the first may wait for
	// the new leader of _schemas-0, the second not.
	ids := map[int]int32{1: 1}
	for i, id := range survivors {
		var ss sr.SubjectSchema
		err := waitUntil(clusterWaitTimeout, func() error {
			var err error
			ss, err = client(id).CreateSchema(ctx, fmt.Sprintf("after-%d", i), schemaOf(fmt.Sprintf("after%d", i)))
			return err
		})
		if err != nil {
			t.Fatalf("register through node %d with node %d killed: %v", id, leader, err)
		}
		if other, dup := ids[ss.ID]; dup || ss.ID != 2+i {
			t.Fatalf("through node %d: id %d (also given through node %d: %v); want %d", id, ss.ID, other, dup, 2+i)
		}
		ids[ss.ID] = id
	}
	want3, err := text(survivors[1], 3)
	if err != nil || !strings.Contains(want3, `"after1"`) {
		t.Fatalf("schema 3 through node %d: %q %v", survivors[1], want3, err)
	}
	for _, id := range survivors {
		subjects, err := client(id).Subjects(ctx)
		if err != nil || fmt.Sprint(subjects) != "[after-0 after-1 first-value]" {
			t.Fatalf("subjects through node %d: %v %v", id, subjects, err)
		}
	}

	c.Node(leader).Restart()
	back := client(leader)
	if err := waitUntil(clusterWaitTimeout, func() error {
		got, err := text(leader, 3)
		if err == nil && got != want3 {
			err = fmt.Errorf("schema 3 is %q, want %q", got, want3)
		}
		return err
	}); err != nil {
		t.Fatalf("the restarted node %d and schema 3: %v", leader, err)
	}
	again, err := back.CreateSchema(ctx, "first-value", schemaOf("a"))
	if err != nil || again.ID != 1 || again.Version != 1 {
		t.Fatalf("the first schema again through the restarted node %d: %+v %v; want id 1 version 1", leader, again, err)
	}
	_, err = back.CreateSchema(ctx, "first-value", schemaOf("b"))
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 409 {
		t.Fatalf("an incompatible schema through the restarted node: %v; want error code 409", err)
	}
}
