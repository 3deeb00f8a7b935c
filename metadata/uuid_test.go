package metadata

import (
	"encoding/base64"
	"testing"
)

// No generated id's text starts with '-' (kafka-storage and other tools
// would take it for an option), and every one is a version-4 UUID.
func TestNewUUID_NeverStartsWithADash(t *testing.T) {
	for range 20000 {
		u := NewUUID()
		if s := base64.RawURLEncoding.EncodeToString(u[:]); s[0] == '-' {
			t.Fatalf("id %s starts with '-'", s)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("id %x is not a version-4 UUID", u)
		}
	}
}
