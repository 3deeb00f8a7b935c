// Package acl is Gregor's authorizer: Kafka's ACL bindings and the
// decisions Apache Kafka's StandardAuthorizer makes with them.
//
// A Binding allows or denies one principal ("User:alice", or "User:*" for
// every principal), from one host (an IP, or "*"), one Operation on the
// resources of one pattern: a Literal name, the literal "*" (every
// resource of the type), or a Prefixed name. A Filter is Kafka's
// AclBindingFilter, which DescribeAcls and DeleteAcls send.
//
// An Authorizer allows a request when the principal is a super user; else
// denies it when a Deny binding matches (the operation itself or All);
// else allows it when an Allow binding matches, where allowing Read,
// Write, Delete or Alter implies Describe and allowing AlterConfigs
// implies DescribeConfigs; else, when no binding at all names the
// resource, Config.AllowIfNone decides (Kafka's
// allow.everyone.if.no.acl.found); else it is denied.
//
// The bindings are a metastore.Collection (a file under __meta on one
// node, etcd's /gregor/acls/ in a cluster), each record a binding's JSON
// under its ID. The Authorizer reads them through a metastore.View, so a
// decision costs an atomic load and a walk of the bindings.
//
// Which operation each API needs on which resource is the broker's: its
// per-API check table (broker/acl_apis.go) calls Authorize.
//
// The package imports metastore and the standard library only.
package acl
