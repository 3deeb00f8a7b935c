package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Two alterations of one user in a request, whatever their mechanisms,
// fail that user with DUPLICATE_RESOURCE and change nothing (Kafka's
// controller keys them by user name); other users are unaffected.
func TestAlterUserScram_TwoAlterationsOfOneUserAreADuplicate(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	ctx := testCtx(t)
	up := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, 8192, []byte("salt"), []byte("salted")
		return u
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, up("ann", 1), up("ann", 2), up("ben", 1))
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "cy", 2
	req.Deletions = append(req.Deletions, del)
	req.Upsertions = append(req.Upsertions, up("cy", 1))
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, r := range resp.Results {
		got[r.User] = r.ErrorCode
	}
	want := map[string]int16{"ann": kerr.DuplicateResource.Code, "ben": 0, "cy": kerr.DuplicateResource.Code}
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for u, c := range want {
		if got[u] != c {
			t.Errorf("%s: %v, want %v", u, kerr.ErrorForCode(got[u]), kerr.ErrorForCode(c))
		}
	}
	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"ann", "ben"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		dreq.Users = append(dreq.Users, u)
	}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range dresp.Results {
		switch r.User {
		case "ann":
			if r.ErrorCode != kerr.ResourceNotFound.Code {
				t.Errorf("ann after the duplicate: %v, %d credentials", kerr.ErrorForCode(r.ErrorCode), len(r.CredentialInfos))
			}
		case "ben":
			if r.ErrorCode != 0 || len(r.CredentialInfos) != 1 || r.CredentialInfos[0].Mechanism != 1 {
				t.Errorf("ben: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.CredentialInfos)
			}
		}
	}
}
