// Package conformance is the differential conformance harness (issue 15):
// the same Kafka protocol requests, built with kmsg and sent at the same
// version, go to a real Apache Kafka broker (compat/kafkaref) and to Gregor;
// the answers are normalised (node addresses, cluster and topic ids, broker
// clock timestamps, throttle times and error messages dropped or replaced by
// markers) and compared line by line. make conformance writes the outcome to
// docs/conformance.md (Report).
package conformance

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenario is one step sequence run once against each broker. Run returns
// the answer to compare: a response, or a value built from several.
type Scenario struct {
	API  string
	Name string
	Run  func(e *Env) any
}

// Outcome is one scenario's normalised answers.
type Outcome struct {
	API, Name     string
	Kafka, Gregor []string
	Match         bool
	Elapsed       time.Duration
}

// Versions returns, per API key, the highest version both brokers
// advertise (ApiVersions v3 to each).
func Versions(kafkaAddr, gregorAddr string) (map[int16]int16, error) {
	var ranges [2]map[int16][2]int16
	for i, addr := range []string{kafkaAddr, gregorAddr} {
		c, err := dialRaw(addr)
		if err != nil {
			return nil, err
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-conformance", "1"
		resp, err := c.do(req)
		c.close()
		if err != nil {
			return nil, fmt.Errorf("ApiVersions to %s: %w", addr, err)
		}
		ranges[i] = map[int16][2]int16{}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			ranges[i][k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
	}
	common := map[int16]int16{}
	for k, kr := range ranges[0] {
		gr, ok := ranges[1][k]
		if !ok {
			continue
		}
		hi := min(kr[1], gr[1])
		if r := kmsg.RequestForKey(k); r != nil {
			hi = min(hi, r.MaxVersion()) // what kmsg can encode
		}
		if hi >= max(kr[0], gr[0]) {
			common[k] = hi
		}
	}
	return common, nil
}

// Run runs every scenario against Kafka, then against Gregor, one at a time.
// progress, if set, is told each outcome.
func Run(kafkaAddr, gregorAddr string, scenarios []Scenario, progress func(Outcome)) ([]Outcome, error) {
	versions, err := Versions(kafkaAddr, gregorAddr)
	if err != nil {
		return nil, err
	}
	kafka := &Env{Name: "kafka", addr: kafkaAddr, versions: versions}
	gregor := &Env{Name: "gregor", addr: gregorAddr, versions: versions}
	defer kafka.close()
	defer gregor.close()
	var out []Outcome
	for _, s := range scenarios {
		start := time.Now()
		o := Outcome{API: s.API, Name: s.Name}
		o.Kafka = runOne(kafka, s)
		o.Gregor = runOne(gregor, s)
		o.Match = slices.Equal(o.Kafka, o.Gregor)
		o.Elapsed = time.Since(start)
		if progress != nil {
			progress(o)
		}
		out = append(out, o)
	}
	return out, nil
}

func runOne(e *Env, s Scenario) (lines []string) {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(failure); ok {
				lines = []string{"failed: " + f.msg}
				return
			}
			lines = []string{fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	return normalise(s.Run(e))
}

// Summary is the match count line.
func Summary(outs []Outcome) (matches, total int) {
	for _, o := range outs {
		if o.Match {
			matches++
		}
	}
	return matches, len(outs)
}

// APIs lists the API names the scenarios cover, sorted.
func APIs(scenarios []Scenario) []string {
	seen := map[string]bool{}
	for _, s := range scenarios {
		seen[s.API] = true
	}
	var out []string
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// cell renders lines for a table cell: escaped, joined, cut at max chars.
func cell(lines []string, max int) string {
	s := strings.Join(lines, "; ")
	if len(s) > max {
		s = s[:max] + " …"
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if s == "" {
		s = "(nothing)"
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}
