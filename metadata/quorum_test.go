package metadata

import (
	"slices"
	"testing"
)

func TestParseVoters(t *testing.T) {
	vs, err := ParseVoters("1@127.0.0.1:9192, 2@127.0.0.1:9193,3@[::1]:9194")
	if err != nil {
		t.Fatal(err)
	}
	want := []Voter{{NodeID: 1, Host: "127.0.0.1", Port: 9192}, {NodeID: 2, Host: "127.0.0.1", Port: 9193}, {NodeID: 3, Host: "::1", Port: 9194}}
	if !slices.Equal(vs, want) {
		t.Fatalf("got %v, want %v", vs, want)
	}
	if got := vs[2].PeerURL(); got != "http://[::1]:9194" {
		t.Fatalf("PeerURL %q", got)
	}
	for _, bad := range []string{"", "1", "1@127.0.0.1", "x@127.0.0.1:1", "1@127.0.0.1:0", "1@:9", "1@h:1,1@h:2", "-1@h:1", "1@h:70000"} {
		if _, err := ParseVoters(bad); err == nil {
			t.Errorf("ParseVoters(%q) accepted", bad)
		}
	}
}
