// Package quota is Kafka's client quotas (KIP-13, KIP-124, KIP-219,
// KIP-546), controller mutation quotas (KIP-599) and connection creation
// rates (KIP-612): the entities and their stored records, the index
// enforcement reads, Kafka's sampled rates and token bucket, and the
// throttle times they give. Enforcement on a connection (muting it,
// answering a throttled Fetch empty) is the broker's.
//
// # Entities and records
//
// An Entity names up to one user, one client-id, or one ip; a nil name is
// that type's default entity. Kafka allows user, client-id, (user,
// client-id) and ip entities; ip may not be combined with the others. The
// keys are producer_byte_rate, consumer_byte_rate (bytes per second,
// LONG), request_percentage and controller_mutation_rate (DOUBLE) for user
// and client-id entities, connection_creation_rate (INT) for ip entities.
//
// The records are a metastore.Collection (a file under __meta on one node,
// etcd's /gregor/quotas/ in a cluster), each an entity's Record as JSON
// under its ID. A Manager reads them through a metastore.View; decoding a
// new revision publishes the Index enforcement reads, so each broker
// enforces a change as soon as it sees it.
//
// # Which quota applies
//
// Each Kind (produce, fetch, request, controller mutation) is resolved on
// its own: the first entity in this order that sets the kind's key gives
// the bound (KIP-55 precedence):
//
//	/users/<u>/clients/<c>
//	/users/<u>/clients/<default>
//	/users/<u>
//	/users/<default>/clients/<c>
//	/users/<default>/clients/<default>
//	/users/<default>
//	/clients/<c>
//	/clients/<default>
//
// Connections share a rate when the matched entity names them alike: a
// /users/u quota is one rate for all of u's clients, a default entity is
// one rate per actual user or client-id.
//
// # Rates and throttle time
//
// A rate is Kafka's sampled Rate: quota.window.num samples (11) of
// quota.window.size.seconds (1); a sample older than num×size is reset; the
// rate is the samples' sum over the time since the oldest sample,
// stretched to at least (num-1)×size. A request is recorded first, then
// checked: when the rate exceeds the bound B the throttle time is
// (rate-B)/B × window, rounded to ms. Request quotas record the handler's
// time as a percentage of one thread (RequestPercent), and their throttle
// is capped at one window.
//
// The controller mutation quota is Kafka's token bucket instead: the
// bucket holds controller.quota.window.num ×
// controller.quota.window.size.seconds × the quota tokens, starts full,
// refills at the quota, and each mutated partition takes one token; below
// zero the time to refill to zero is the throttle time. A strict Mutation
// (clients that understand THROTTLING_QUOTA_EXCEEDED) refuses while the
// bucket is below zero; a permissive one mutates and throttles.
//
// Connection creation rates (ConnectionRates) are sampled rates of
// connections per second, broker-wide, per listener and per IP, whose
// throttle is capped at one window.
//
// With no quota configured Manager.Index is nil, so a request costs one
// atomic load. The package imports metastore and the standard library
// only; its clock can be set (SetClock) for tests.
package quota
