package broker

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSeeds are Produce request bodies of every decoded version: several
// topics and partitions, null and empty records, a transactional id.
func produceSeeds() [][]byte {
	var seeds [][]byte
	for v := int16(3); v <= 12; v++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, -1, 1234
		if v%2 == 0 {
			req.TransactionID = kmsg.StringPtr("txn-" + string(rune('a'+v)))
		}
		for ti := range int(v%3) + 1 {
			t := kmsg.NewProduceRequestTopic()
			t.Topic = "topic-" + string(rune('a'+ti))
			for pi := range ti + int(v%2) + 1 {
				p := kmsg.NewProduceRequestTopicPartition()
				p.Partition = int32(pi)
				switch pi {
				case 0:
					p.Records = []byte("batch bytes")
				case 1:
					p.Records = []byte{}
				}
				t.Partitions = append(t.Partitions, p)
			}
			req.Topics = append(req.Topics, t)
		}
		if v >= 9 {
			req.UnknownTags.Set(7, []byte("tag"))
		}
		seeds = append(seeds, append([]byte{byte(v)}, req.AppendTo(nil)...))
	}
	return seeds
}

// FuzzDecodeProduce checks decodeProduce against kmsg's ReadFrom: for any
// version and body, both fail or both give the same request (compared by
// its encoding, which covers every field, null versus empty records and
// unknown tags), also when decodeProduce reuses a request and a name cache
// that earlier bodies filled. It never panics.
func FuzzDecodeProduce(f *testing.F) {
	seeds := produceSeeds()
	for _, s := range seeds {
		f.Add(s)
		f.Add(s[:len(s)/2]) // truncated
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		version, body := int16(in[0]%16), in[1:]
		want := kmsg.NewPtrProduceRequest()
		want.Version = version
		wantErr := want.ReadFrom(body)

		var names nameCache
		for _, reused := range []bool{false, true} {
			got := kmsg.NewPtrProduceRequest()
			if reused { // dirty it with a larger request first
				last := seeds[len(seeds)-1]
				got.Version = int16(last[0])
				if err := decodeProduce(got, last[1:], &names); err != nil {
					t.Fatal(err)
				}
			}
			got.Version = version
			gotErr := decodeProduce(got, body, &names)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("v%d reused=%v: error %v, kmsg %v", version, reused, gotErr, wantErr)
			}
			if gotErr != nil {
				continue
			}
			if w, g := want.AppendTo(nil), got.AppendTo(nil); !bytes.Equal(w, g) {
				t.Fatalf("v%d reused=%v: decoded differently:\n got %+v\nwant %+v", version, reused, got, want)
			}
		}
	})
}

// TestDecodeProduce_Seeds runs the fuzz seeds, each decoded after the
// others into one reused request: it gives kmsg's request every time.
func TestDecodeProduce_Seeds(t *testing.T) {
	var names nameCache
	got := kmsg.NewPtrProduceRequest()
	seeds := produceSeeds()
	for _, order := range [][][]byte{seeds, reversed(seeds)} {
		for _, s := range order {
			want := kmsg.NewPtrProduceRequest()
			want.Version = int16(s[0])
			if err := want.ReadFrom(s[1:]); err != nil {
				t.Fatal(err)
			}
			got.Version = int16(s[0])
			if err := decodeProduce(got, s[1:], &names); err != nil {
				t.Fatal(err)
			}
			if w, g := want.AppendTo(nil), got.AppendTo(nil); !bytes.Equal(w, g) {
				t.Fatalf("v%d: got %+v, want %+v", s[0], got, want)
			}
			if (got.TransactionID == nil) != (want.TransactionID == nil) || len(got.Topics) != len(want.Topics) {
				t.Fatalf("v%d: got %+v, want %+v", s[0], got, want)
			}
		}
	}
}

func reversed[T any](s []T) []T {
	r := make([]T, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}
