// Package compat runs real, unmodified Kafka clients against the real Gregor
// binary over loopback TCP and asserts exact results.
//
// The package has no exported API; everything lives in its tests. It imports
// nothing from Gregor: the broker is built with `go build ./cmd/gregor` once
// per test run and then driven only through its command line, its stderr
// `msg=listening` line, signals, and the Kafka protocol.
//
// # Clients
//
//   - franz-go (kgo, kadm, and raw kmsg requests through kgo.Client.Request)
//   - IBM/sarama (SyncProducer, Consumer, ClusterAdmin)
//   - kcat (librdkafka), as an external program
//   - confluent-kafka and aiokafka from Python, kafkajs and
//     @kafkajs/confluent-schema-registry from node, and the Apache Kafka Java
//     clients (kafka-clients, Streams, Connect, MirrorMaker 2), each run as
//     an external program from its own directory (python/, kafkajs/, java/)
//   - schema registry clients against the broker's registry
//     (schema.registry.listeners): confluent-kafka's SchemaRegistryClient
//     and Avro serdes, @kafkajs/confluent-schema-registry (Avro, Protobuf,
//     JSON Schema), and from Java Flink's Confluent-registry Avro format
//     with Confluent's CachedSchemaRegistryClient (java/, profile registry)
//   - franz-go's own integration tests (go test github.com/twmb/franz-go/pkg/kgo),
//     restricted to the tests listed in franzgo-passing.txt
//
// # Running
//
// See README.md for the command and the environment knobs.
package compat
