// Package config is the definitions of the configuration Gregor knows,
// under Kafka's names: topic configs (TopicDefs, with the broker property
// that supplies each default, Kafka's synonym), broker properties
// (BrokerDefs, with which of them are read-only), the listener, TLS and
// SASL properties, group configs (GroupDefs, with the broker properties
// that supply and bound each: ValidateGroupValues, Clamp, CheckGroupProps),
// each with its type, default, validation and documentation as
// DescribeConfigs reports them; and the
// names several packages share: security protocols, SASL mechanisms, the
// rack-aware replica selector.
//
// Where a value comes from (a topic override, a dynamic broker config, a
// static property, the default) is the broker's to decide, as it keeps
// those values; this package says what each property is. It imports only
// kmsg and the standard library.
package config
