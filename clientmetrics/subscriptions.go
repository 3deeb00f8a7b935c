package clientmetrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/metastore"
)

// The configs of a CLIENT_METRICS resource.
const (
	ConfigMetrics  = "metrics"
	ConfigInterval = "interval.ms"
	ConfigMatch    = "match"

	// DefaultIntervalMs is interval.ms when unset (5 minutes).
	DefaultIntervalMs = 300000
	minIntervalMs     = 100
	maxIntervalMs     = 3600000

	// AllMetrics in metrics subscribes to every metric.
	AllMetrics = "*"
)

// The match criteria keys (KIP-714).
const (
	MatchClientID              = "client_id"
	MatchClientInstanceID      = "client_instance_id"
	MatchClientSoftwareName    = "client_software_name"
	MatchClientSoftwareVersion = "client_software_version"
	MatchClientSourceAddress   = "client_source_address"
	MatchClientSourcePort      = "client_source_port"
)

var matchKeys = []string{MatchClientID, MatchClientInstanceID, MatchClientSoftwareName,
	MatchClientSoftwareVersion, MatchClientSourceAddress, MatchClientSourcePort}

// ConfigDef describes one CLIENT_METRICS config, as DescribeConfigs lists it.
type ConfigDef struct {
	Name    string
	List    bool // LIST, else INT
	Default string
	Doc     string
}

// ConfigDefs are the CLIENT_METRICS configs in name order, with Kafka's
// types, defaults and documentation.
var ConfigDefs = []ConfigDef{
	{Name: ConfigInterval, Default: strconv.Itoa(DefaultIntervalMs), Doc: "Metrics push interval in milliseconds"},
	{Name: ConfigMatch, List: true, Doc: "Client match criteria"},
	{Name: ConfigMetrics, List: true, Doc: "Telemetry metric name prefix list"},
}

// ErrInvalidRequest is returned (wrapped, with Kafka's message) when a
// subscription change is malformed: an empty name, an unknown config, an
// interval out of range. ErrInvalidConfig is returned when a value does not
// parse: a match pattern, an interval that is not a number, a list
// operation on a config Kafka refuses it for.
var (
	ErrInvalidRequest = errors.New("invalid request")
	ErrInvalidConfig  = errors.New("invalid config")
)

// configError carries Kafka's message, without the sentinel's text.
type configError struct {
	kind error
	msg  string
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.kind }

func invalidRequest(format string, a ...any) error {
	return &configError{ErrInvalidRequest, fmt.Sprintf(format, a...)}
}
func invalidConfig(format string, a ...any) error {
	return &configError{ErrInvalidConfig, fmt.Sprintf(format, a...)}
}

// Subscription is one parsed subscription.
type Subscription struct {
	Name       string
	Metrics    []string
	IntervalMs int32
	// Match is the match criteria by key, each regex anchored to match
	// the whole value.
	Match map[string]*regexp.Regexp
	// Configs are the configs as set.
	Configs map[string]string
}

// record is a subscription as the collection stores it.
type record struct {
	Name    string            `json:"name"`
	Configs map[string]string `json:"configs"`
}

// splitList splits a LIST config value as Kafka does: on commas, each
// item trimmed, an empty value an empty list.
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// Validate checks a subscription's configs as Kafka does and returns it
// parsed. Its errors wrap ErrInvalidRequest or ErrInvalidConfig.
func Validate(name string, configs map[string]string) (*Subscription, error) {
	if name == "" {
		return nil, invalidRequest("Subscription name can't be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if k != ConfigMetrics && k != ConfigInterval && k != ConfigMatch {
			return nil, invalidRequest("Unknown client metrics configuration: %s", k)
		}
	}
	s := &Subscription{Name: name, IntervalMs: DefaultIntervalMs, Match: map[string]*regexp.Regexp{}, Configs: configs}
	if v, ok := configs[ConfigInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return nil, invalidConfig("Invalid value %s for configuration interval.ms: Not a number of type INT", v)
		}
		if n < minIntervalMs || n > maxIntervalMs {
			return nil, invalidRequest("Invalid value %d for interval.ms, interval must be between 100 and 3600000 (1 hour)", n)
		}
		s.IntervalMs = int32(n)
	}
	s.Metrics = splitList(configs[ConfigMetrics])
	for _, p := range splitList(configs[ConfigMatch]) {
		k, re, ok := strings.Cut(p, "=")
		k, re = strings.TrimSpace(k), strings.TrimSpace(re)
		if !ok || !slices.Contains(matchKeys, k) || re == "" {
			return nil, invalidConfig("Illegal client matching pattern: %s", p)
		}
		rx, err := regexp.Compile("^(?:" + re + ")$")
		if err != nil {
			return nil, invalidConfig("Illegal client matching pattern: %s", p)
		}
		s.Match[k] = rx
	}
	return s, nil
}

// decodeSubscriptions is the collection's view: the valid subscriptions by
// name (a record that no longer validates is skipped).
func decodeSubscriptions(recs metastore.Records) map[string]*Subscription {
	out := make(map[string]*Subscription, len(recs))
	for _, v := range recs {
		var r record
		if json.Unmarshal(v, &r) != nil {
			continue
		}
		if s, err := Validate(r.Name, r.Configs); err == nil {
			out[r.Name] = s
		}
	}
	return out
}

// Names returns the subscriptions' names, sorted.
func (m *Manager) Names() []string {
	return slices.Sorted(maps.Keys(m.subscriptions()))
}

// Configs returns the configs set on subscription name (nil if there is
// no such subscription).
func (m *Manager) Configs(name string) map[string]string {
	if s := m.subscriptions()[name]; s != nil {
		return s.Configs
	}
	return nil
}

// Alter changes subscription name: update is given a copy of its configs
// (empty if it does not exist) and returns the new ones, which are
// validated; with validateOnly nothing is stored. No configs left removes
// the subscription. Its errors are update's, Validate's, or the
// collection's.
func (m *Manager) Alter(ctx context.Context, name string, validateOnly bool, update func(cur map[string]string) (map[string]string, error)) error {
	if name == "" {
		return invalidRequest("Subscription name can't be empty")
	}
	cur := maps.Clone(m.Configs(name))
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := update(cur)
	if err != nil {
		return err
	}
	if _, err := Validate(name, next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	c := m.coll()
	if c == nil {
		return errors.New("clientmetrics: no store")
	}
	if len(next) == 0 {
		_, err = c.Update(ctx, nil, []string{name})
		return err
	}
	b, err := json.Marshal(record{Name: name, Configs: next})
	if err != nil {
		return err
	}
	_, err = c.Update(ctx, metastore.Records{name: b}, nil)
	return err
}
