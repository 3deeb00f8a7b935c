package config

import "github.com/twmb/franz-go/pkg/kmsg"

// Subject name strategies of Confluent's serializers, by their class names.
const (
	TopicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	RecordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	TopicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// ConfluentTopicDefs are topic configs of Confluent Server that Gregor
// serves, under Confluent's names so that a topic made for Confluent
// Server keeps them: broker-side schema ID validation. Apache Kafka has
// none of them, so they are accepted, stored and described when set, and
// not listed otherwise (Topic and ValidateTopic know them; TopicDefs,
// which DescribeConfigs lists, does not).
var ConfluentTopicDefs = []Def{
	{"confluent.key.schema.validation", kmsg.ConfigTypeBoolean, "false", "", false, boolean, "Refuse records whose key is not in Confluent's wire format with a schema id registered under the key's subject (needs schema.registry.listeners)."},
	{"confluent.value.schema.validation", kmsg.ConfigTypeBoolean, "false", "", false, boolean, "Refuse records whose value is not in Confluent's wire format with a schema id registered under the value's subject (needs schema.registry.listeners)."},
	{"confluent.key.subject.name.strategy", kmsg.ConfigTypeString, TopicNameStrategy, "", false, oneOf(TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy), "How the key's subject is named: <topic>-key, the record's name, or <topic>-<record name>."},
	{"confluent.value.subject.name.strategy", kmsg.ConfigTypeString, TopicNameStrategy, "", false, oneOf(TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy), "How the value's subject is named: <topic>-value, the record's name, or <topic>-<record name>."},
}

func init() {
	for i := range ConfluentTopicDefs {
		topicByName[ConfluentTopicDefs[i].Name] = &ConfluentTopicDefs[i]
	}
}
