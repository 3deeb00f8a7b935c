package config

import (
	"strings"
	"testing"
)

// TestDefs_Consistent: every name is defined once, every non-empty default
// passes its own validation, every topic config's synonym is a broker
// property of the same type, and group configs' broker properties exist.
func TestDefs_Consistent(t *testing.T) {
	for _, set := range []struct {
		what string
		defs []Def
	}{{"topic", TopicDefs}, {"broker", BrokerDefs}} {
		seen := map[string]bool{}
		for _, d := range set.defs {
			if seen[d.Name] {
				t.Errorf("%s config %s defined twice", set.what, d.Name)
			}
			seen[d.Name] = true
			if d.Default != "" && d.Validate(d.Default) != nil {
				t.Errorf("%s config %s: its default %q does not validate: %v", set.what, d.Name, d.Default, d.Validate(d.Default))
			}
		}
	}
	for _, d := range TopicDefs {
		if d.Synonym == "" {
			continue
		}
		bd := Broker(d.Synonym)
		if bd == nil || bd.Type != d.Type {
			t.Errorf("topic config %s: synonym %s is not a broker property of its type (%v)", d.Name, d.Synonym, bd)
		}
	}
	for _, g := range GroupDefs {
		if g.BrokerProp != "" && Broker(g.BrokerProp) == nil {
			t.Errorf("group config %s: broker property %s unknown", g.Name, g.BrokerProp)
		}
		if err := ValidateGroup(&g, g.Default); err != nil {
			t.Errorf("group config %s: its default does not validate: %v", g.Name, err)
		}
	}
}

func TestValidateTopic(t *testing.T) {
	for _, c := range []struct{ name, value, err string }{
		{"retention.ms", "-1", ""},
		{"retention.ms", "-2", "must be at least -1"},
		{"cleanup.policy", "compact,delete", ""},
		{"cleanup.policy", "compact,nope", "must be a list of delete, compact"},
		{"min.cleanable.dirty.ratio", "1.5", "invalid value 1.5 for configuration min.cleanable.dirty.ratio"},
		{"max.message.bytes", "2147483648", "out of range for an int"},
		{"no.such.config", "1", "unknown topic config name: no.such.config"},
	} {
		err := ValidateTopic(c.name, c.value)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ValidateTopic(%s, %s) = %v, want %q", c.name, c.value, err, c.err)
		}
	}
}

func TestListenerConfigName(t *testing.T) {
	for in, want := range map[string]string{
		"ssl.keystore.location":                                 "ssl.keystore.location",
		"listener.name.external.ssl.keystore.location":          "ssl.keystore.location",
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "sasl.jaas.config",
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":   "sasl.jaas.config",
		"listener.name.internal.max.connection.creation.rate":   "max.connection.creation.rate",
	} {
		if got := ListenerConfigName(in); got != want {
			t.Errorf("ListenerConfigName(%s) = %s, want %s", in, got, want)
		}
	}
}
