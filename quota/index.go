package quota

import (
	"net"
	"net/url"
)

// Kind is an enforced quota type.
type Kind int8

// The kinds.
const (
	Produce  Kind = iota // producer_byte_rate
	Fetch                // consumer_byte_rate
	Request              // request_percentage
	Mutation             // controller_mutation_rate (KIP-599)
	NumKinds
)

var (
	kindKeys  = [NumKinds]string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}
	kindNames = [NumKinds]string{"produce", "fetch", "request", "controller_mutation"}
)

// String is the kind's name in metrics: produce, fetch, request,
// controller_mutation.
func (k Kind) String() string {
	if k < 0 || k >= NumKinds {
		return "unknown"
	}
	return kindNames[k]
}

// Index is the enforced quotas, by kind and entity ID.
type Index struct {
	bounds [NumKinds]map[string]float64
}

// BuildIndex indexes records; nil when none sets an enforced key.
func BuildIndex(recs map[string]Record) *Index {
	ix := &Index{}
	any := false
	for id, q := range recs {
		for k := range NumKinds {
			if v, ok := q.Values[kindKeys[k]]; ok {
				if ix.bounds[k] == nil {
					ix.bounds[k] = map[string]float64{}
				}
				ix.bounds[k][id] = v
				any = true
			}
		}
	}
	if !any {
		return nil
	}
	return ix
}

// resolve finds kind's bound for (user, client) by precedence, with the
// tags of its shared rate.
func (ix *Index) resolve(kind Kind, user, client string) (float64, string, string, bool) {
	m := ix.bounds[kind]
	if len(m) == 0 {
		return 0, "", "", false
	}
	u, c := "users/"+url.PathEscape(user), "clients/"+url.PathEscape(client)
	du, dc := "users/"+DefaultName, "clients/"+DefaultName
	order := [...]struct {
		id           string
		user, client string
	}{
		{u + "/" + c, user, client},
		{u + "/" + dc, user, client},
		{u, user, ""},
		{du + "/" + c, user, client},
		{du + "/" + dc, user, client},
		{du, user, ""},
		{c, "", client},
		{dc, "", client},
	}
	for _, o := range order {
		if v, ok := m[o.id]; ok {
			return v, o.user, o.client, true
		}
	}
	return 0, "", "", false
}

// ipRates indexes the ip entities' connection_creation_rate by IP ("" for
// the default entity); nil when there is none.
func ipRates(recs map[string]Record) *map[string]float64 {
	var out map[string]float64
	for _, q := range recs {
		v, ok := q.Values[ConnectionCreationRate]
		n, isIP := q.Entity[IP]
		if !ok || !isIP {
			continue
		}
		ip := ""
		if n != nil {
			ip = *n
			if p := net.ParseIP(ip); p != nil {
				ip = p.String()
			}
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[ip] = v
	}
	if out == nil {
		return nil
	}
	return &out
}
