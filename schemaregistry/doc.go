// Package schemaregistry serves Confluent Schema Registry's REST API.
package schemaregistry
