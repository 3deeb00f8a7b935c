package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Operation is an ACL operation, with Kafka's codes (AclOperation).
type Operation int8

// The operations.
const (
	AnyOperation    Operation = 1 // only in a Filter
	All             Operation = 2
	Read            Operation = 3
	Write           Operation = 4
	Create          Operation = 5
	Delete          Operation = 6
	Alter           Operation = 7
	Describe        Operation = 8
	ClusterAction   Operation = 9
	DescribeConfigs Operation = 10
	AlterConfigs    Operation = 11
	IdempotentWrite Operation = 12
	CreateTokens    Operation = 13
	DescribeTokens  Operation = 14
)

// ResourceType is the type of resource a binding covers, with Kafka's
// codes.
type ResourceType int8

// The resource types.
const (
	AnyResource     ResourceType = 1 // only in a Filter
	Topic           ResourceType = 2
	Group           ResourceType = 3
	Cluster         ResourceType = 4
	TransactionalID ResourceType = 5
	DelegationToken ResourceType = 6
	User            ResourceType = 7 // a principal's name: CREATE_TOKENS, DESCRIBE_TOKENS
)

// PatternType is how a binding's resource name matches resources, with
// Kafka's codes.
type PatternType int8

// The pattern types.
const (
	AnyPattern PatternType = 1 // only in a Filter: any pattern, name exact
	Match      PatternType = 2 // only in a Filter: the bindings that cover the name
	Literal    PatternType = 3
	Prefixed   PatternType = 4
)

// Permission says whether a binding allows or denies, with Kafka's codes.
type Permission int8

// The permissions.
const (
	AnyPermission Permission = 1 // only in a Filter
	Deny          Permission = 2
	Allow         Permission = 3
)

// ClusterName is the name of the one Cluster resource.
const ClusterName = "kafka-cluster"

// Binding is one ACL: a resource pattern and an access control entry. Its
// JSON is how the metadata store keeps it.
type Binding struct {
	ResourceType ResourceType `json:"resourceType"`
	ResourceName string       `json:"resourceName"`
	PatternType  PatternType  `json:"patternType"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// ID is the binding's key in the metadata store: a hash of its fields.
func (a *Binding) ID() string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%s\x00%s\x00%d\x00%d", a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// covers tells whether the binding's pattern covers the resource.
func (a *Binding) covers(typ ResourceType, name string) bool {
	if a.ResourceType != typ {
		return false
	}
	switch a.PatternType {
	case Literal:
		return a.ResourceName == name || a.ResourceName == "*"
	case Prefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

// names tells whether the binding applies to the principal from host.
func (a *Binding) names(principal, host string) bool {
	return (a.Principal == principal || a.Principal == "User:*") && (a.Host == "*" || a.Host == host)
}

// grants tells whether allowing the operation allowed grants op.
func grants(allowed, op Operation) bool {
	switch {
	case allowed == All || allowed == op:
		return true
	case op == Describe:
		return allowed == Read || allowed == Write || allowed == Delete || allowed == Alter
	case op == DescribeConfigs:
		return allowed == AlterConfigs
	}
	return false
}

// Validate checks a binding given to CreateAcls as Kafka does, and returns
// Kafka's message for the first fault, or "".
func (a *Binding) Validate() string {
	switch {
	case a.ResourceType < Topic || a.ResourceType > User:
		return "Invalid resource type"
	case a.PatternType != Literal && a.PatternType != Prefixed:
		return "Invalid pattern type"
	case a.Operation < All || a.Operation > DescribeTokens:
		return "Invalid operation"
	case a.Permission != Deny && a.Permission != Allow:
		return "Invalid permission type"
	case a.ResourceName == "":
		return "Resource name should not be empty"
	case a.ResourceType == Cluster && (a.ResourceName != ClusterName || a.PatternType != Literal):
		return "The only valid name for the CLUSTER resource is " + ClusterName
	case a.Host == "":
		return "Invalid host"
	}
	typ, name, ok := strings.Cut(a.Principal, ":")
	if !ok || typ == "" || name == "" {
		return "Could not parse principal from `" + a.Principal + "` (no colon is present separating the principal type from the principal name)"
	}
	return ""
}

// Filter is Kafka's AclBindingFilter: nil strings and the Any codes match
// every binding.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Matches tells whether the filter selects the binding.
func (f *Filter) Matches(a *Binding) bool {
	if f.ResourceType != AnyResource && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != AnyPattern && f.PatternType != Match && f.PatternType != a.PatternType {
		return false
	}
	if f.Name != nil {
		switch {
		case f.PatternType == AnyPattern || f.PatternType == a.PatternType:
			if *f.Name != a.ResourceName {
				return false
			}
		case a.PatternType == Literal:
			if *f.Name != a.ResourceName && a.ResourceName != "*" {
				return false
			}
		case a.PatternType == Prefixed:
			if !strings.HasPrefix(*f.Name, a.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	return (f.Principal == nil || *f.Principal == a.Principal) &&
		(f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == AnyOperation || f.Operation == a.Operation) &&
		(f.Permission == AnyPermission || f.Permission == a.Permission)
}

// Validate checks a DescribeAcls or DeleteAcls filter, and returns the
// message for the first fault, or "".
func (f *Filter) Validate() string {
	switch {
	case f.ResourceType < AnyResource || f.ResourceType > User:
		return "invalid resource type"
	case f.PatternType < AnyPattern || f.PatternType > Prefixed:
		return "invalid pattern type"
	case f.Operation < AnyOperation || f.Operation > DescribeTokens:
		return "invalid operation"
	case f.Permission < AnyPermission || f.Permission > Allow:
		return "invalid permission type"
	}
	return ""
}

// Bits is the KIP-430 bit field of ops (authorized operations).
func Bits(ops ...Operation) int32 {
	var v int32
	for _, o := range ops {
		v |= 1 << o
	}
	return v
}
