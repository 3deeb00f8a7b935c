package compat

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKcatOAuth: kcat (librdkafka) authenticates with OAUTHBEARER over
// SASL_PLAINTEXT with librdkafka's own unsecured token
// (enable.sasl.oauthbearer.unsecure.jwt, principal=alice), which the
// broker's unsecured validator accepts: it produces keyed records with a
// header and consumes them back exactly. A token whose principal is in
// another claim than "sub" (principalClaimName=user) is refused: kcat
// reports the broker's error challenge ({"status":"invalid_token"}, which
// it acknowledges as RFC 7628 asks) and the broker logs why.
func TestKcatOAuth(t *testing.T) {
	kcatPath(t)
	b, addrs := secureBroker(t, newSecPKI(t))
	topic := topicName(t, "")
	oauth := func(config string) []string {
		return []string{"-b", addrs["SASL_PLAINTEXT"], "-X", "security.protocol=SASL_PLAINTEXT",
			"-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
			"-X", "sasl.oauthbearer.config=" + config, "-X", "allow.auto.create.topics=true"}
	}
	good := oauth("principal=" + secUser + " scope=produce,consume lifeSeconds=600")
	kcat(t, "k1:one\nk2:two\nk1:three\n", append(good, "-P", "-t", topic, "-p", "0", "-K:", "-H", "origin=kcat")...)
	out := kcat(t, "", append(good, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%p:%o:%k=%s;%h\n")...)
	if want := "0:0:k1=one;origin=kcat\n0:1:k2=two;origin=kcat\n0:2:k1=three;origin=kcat\n"; out != want {
		t.Fatalf("kcat consumed %q, want %q", out, want)
	}
	if !b.waitLog("listener=SASL_PLAINTEXT principal=User:"+secUser+" mechanism=OAUTHBEARER", 10*time.Second) {
		t.Error("the broker did not log the OAUTHBEARER principal")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), append(oauth("principal="+secUser+" principalClaimName=user"), "-L", "-m", "2")...)
	res, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(res), `SASL authentication error: {"status":"invalid_token"} (after `) {
		t.Fatalf("token without sub: err %v, output %s", err, res)
	}
	if !b.waitLog(`msg="OAUTHBEARER token rejected" err="no \"sub\" claim"`, 10*time.Second) {
		t.Error("the broker did not log why it refused the token")
	}
}
