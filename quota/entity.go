package quota

import (
	"math"
	"net"
	"net/url"
	"strings"
)

// Entity types, as Kafka names them.
const (
	User     = "user"
	ClientID = "client-id"
	IP       = "ip"
)

// Quota keys, as Kafka names them.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// KeyType is a quota key's Kafka config type, which bounds its values.
type KeyType int8

// The key types.
const (
	Long KeyType = iota
	Double
	Int
)

var (
	clientKeys = map[string]KeyType{
		ProducerByteRate:       Long,
		ConsumerByteRate:       Long,
		RequestPercentage:      Double,
		ControllerMutationRate: Double,
	}
	ipKeys = map[string]KeyType{ConnectionCreationRate: Int}
)

// Entity is one entity: a name per entity type present, nil for the
// type's default entity.
type Entity map[string]*string

// DefaultName stands for a default entity in IDs, as in Kafka's ZooKeeper
// paths; escaping keeps it apart from a real name "<default>".
const DefaultName = "<default>"

// ID is the entity's key in the store and in the Index: Kafka's config
// path of the entity (users/<u>/clients/<c>, users/<u>, clients/<c>,
// ips/<ip>), names path-escaped.
func (e Entity) ID() string {
	seg := func(n *string) string {
		if n == nil {
			return DefaultName
		}
		return url.PathEscape(*n)
	}
	var parts []string
	if n, ok := e[User]; ok {
		parts = append(parts, "users", seg(n))
	}
	if n, ok := e[ClientID]; ok {
		parts = append(parts, "clients", seg(n))
	}
	if n, ok := e[IP]; ok {
		parts = append(parts, "ips", seg(n))
	}
	return strings.Join(parts, "/")
}

// Record is one entity's stored quotas; its JSON is how the store keeps
// it.
type Record struct {
	Entity Entity             `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// ValidateEntity checks an entity's types, names and combination, as
// Kafka's controller does, and returns the keys it may carry. A non-empty
// message is Kafka's for an INVALID_REQUEST.
func ValidateEntity(types []string, e Entity) (map[string]KeyType, string) {
	if len(types) == 0 {
		return nil, "Invalid empty client quota entity"
	}
	seen := map[string]bool{}
	for _, t := range types {
		if seen[t] {
			return nil, "Invalid empty client quota entity, duplicate entity entry " + t
		}
		seen[t] = true
		switch t {
		case User, ClientID, IP:
		default:
			return nil, "Unhandled client quota entity type: " + t
		}
		if n := e[t]; n != nil && *n == "" {
			return nil, "Empty " + t + " not supported"
		}
	}
	if _, ok := e[IP]; ok {
		if len(e) > 1 {
			return nil, "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
		}
		if n := e[IP]; n != nil && net.ParseIP(*n) == nil {
			return nil, *n + " is not a valid IP or resolvable host."
		}
		return ipKeys, ""
	}
	return clientKeys, ""
}

// ValidateValue checks one value set for key, as Kafka's controller does
// (positive; integral and in range for INT and LONG keys), and returns
// Kafka's message for a fault, or "".
func ValidateValue(keys map[string]KeyType, key string, v float64) string {
	typ, ok := keys[key]
	if !ok {
		return "Invalid configuration key " + key
	}
	if !(v > 0) { // NaN too
		return "Quota " + key + " must be greater than 0"
	}
	switch typ {
	case Int:
		if v > math.MaxInt32 {
			return "Proposed value for " + key + " is too large for an INT."
		}
	case Long:
		if v > math.MaxInt64 {
			return "Proposed value for " + key + " is too large for a LONG."
		}
	default:
		if math.IsInf(v, 0) {
			return "Proposed value for " + key + " is not finite."
		}
		return ""
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return key + " cannot be a fractional value."
	}
	return ""
}
