package schemaregistry

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRegister_Evolving registers version after version of one Avro
// record, each adding a field with a default, at BACKWARD (checked against
// the latest) and BACKWARD_TRANSITIVE (against every version). A b.N of
// 200 is a subject with 200 versions.
func BenchmarkRegister_Evolving(b *testing.B) {
	for _, level := range []string{CompatBackward, CompatBackwardTransitive} {
		b.Run(level, func(b *testing.B) {
			reg, err := New(Config{Log: NewMemoryLog(), Compatibility: level})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var fields strings.Builder
			for i := range b.N {
				fmt.Fprintf(&fields, `,{"name":"f%d","type":"string","default":""}`, i)
				text := `{"type":"record","name":"evolving","fields":[{"name":"id","type":"long"}` + fields.String() + `]}`
				if _, err := reg.register(ctx, "evolving", registerRequest{Schema: text}, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
