'use strict'
// @kafkajs/confluent-schema-registry with kafkajs against Gregor's schema
// registry; run by TestKafkajsSchemaRegistry (compat/kafkajs_test.go), which
// starts a fresh broker with schema.registry.listeners and passes:
//
//   GREGOR_BOOTSTRAP        the PLAINTEXT listener's host:port (comma-separated in cluster mode)
//   GREGOR_SCHEMA_REGISTRY  the registry's URL
//
// Each case prints "ok <case> <detail>" once it passed; the first failure
// prints "FAIL <case>: <error>" and exits 1. The broker is fresh, so the
// topics, subjects and schema ids are the same on every run and the Go test
// compares the lines exactly.

const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const env = (k) => {
  const v = process.env[k]
  if (!v) throw new Error(`${k} is not set`)
  return v
}

const kafka = new Kafka({
  clientId: 'gregor-compat-schema-registry',
  brokers: env('GREGOR_BOOTSTRAP').split(','),
  logLevel: process.env.KAFKAJS_LOG === '1' ? logLevel.INFO : logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 },
})
const registry = new SchemaRegistry({ host: env('GREGOR_SCHEMA_REGISTRY'), clientId: 'gregor-compat' })

function check(cond, what) {
  if (!cond) throw new Error(what)
}

// Each topic takes values of one schema, under TopicNameStrategy's subject
// <topic>-value; the broker validates the schema ids of its values
// (confluent.value.schema.validation), so it reads the library's framing too.
const avroUser = {
  type: 'record',
  name: 'User',
  namespace: 'gregor.compat',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'age', type: 'int' },
    { name: 'email', type: ['null', 'string'], default: null },
  ],
}
// Adds a field with a default: BACKWARD compatible.
const avroUserWithCountry = {
  ...avroUser,
  fields: [...avroUser.fields, { name: 'country', type: 'string', default: 'unknown' }],
}
// Adds a field without a default: not BACKWARD compatible (records
// written with the old schema lack it).
const avroUserWithPhone = {
  ...avroUser,
  fields: [...avroUser.fields, { name: 'phone', type: 'string' }],
}

const cases = [
  {
    name: 'avro',
    topic: 'sr-avro',
    schema: { type: SchemaType.AVRO, schema: JSON.stringify(avroUser) },
    payloads: [
      { name: 'ada', age: 36, email: 'ada@example.com' },
      { name: 'alan', age: 41, email: null },
      { name: 'grace', age: 85, email: null },
    ],
  },
  {
    name: 'protobuf',
    topic: 'sr-protobuf',
    schema: {
      type: SchemaType.PROTOBUF,
      schema: `syntax = "proto3";
package gregor.compat;

message Order {
  string id = 1;
  int32 quantity = 2;
  repeated string tags = 3;
}
`,
    },
    payloads: [
      { id: 'o-1', quantity: 2, tags: ['red', 'large'] },
      { id: 'o-2', quantity: 7, tags: ['blue'] },
      { id: 'o-3', quantity: 1, tags: ['green', 'small', 'gift'] },
    ],
  },
  {
    name: 'json',
    topic: 'sr-json',
    schema: {
      type: SchemaType.JSON,
      schema: JSON.stringify({
        $schema: 'http://json-schema.org/draft-07/schema#',
        title: 'Product',
        type: 'object',
        properties: {
          sku: { type: 'string' },
          price: { type: 'number' },
          tags: { type: 'array', items: { type: 'string' } },
        },
        required: ['sku', 'price'],
        additionalProperties: false,
      }),
    },
    payloads: [
      { sku: 'p-1', price: 9.5, tags: ['new'] },
      { sku: 'p-2', price: 120 },
      { sku: 'p-3', price: 0.25, tags: ['sale', 'last'] },
    ],
  },
]

// consume reads want records from each topic from the beginning with a
// consumer group and returns them by topic, in offset order.
async function consume(want) {
  const got = new Map(Object.keys(want).map((t) => [t, []]))
  const consumer = kafka.consumer({ groupId: 'sr-readers', sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 200 })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: Object.keys(want), fromBeginning: true })
    await new Promise((resolve, reject) => {
      const count = () => [...got.values()].reduce((n, l) => n + l.length, 0)
      const total = Object.values(want).reduce((n, w) => n + w, 0)
      const timer = setTimeout(() => reject(new Error(`consumed ${count()} of ${total} records in 20 s`)), 20000)
      consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          got.get(topic).push({ partition, message })
          if (count() === total) {
            clearTimeout(timer)
            resolve()
          }
        },
      }).catch(reject)
    })
  } finally {
    await consumer.disconnect()
  }
  for (const [topic, l] of got) {
    check(l.length === want[topic], `${topic}: ${l.length} records, want ${want[topic]}`)
    l.forEach((r, i) => check(r.partition === 0 && r.message.offset === String(i),
      `${topic}: record ${i} at ${r.partition}:${r.message.offset}, want 0:${i}`))
  }
  return got
}

// errorLine is what the Go test compares for a refusal: the error's class,
// its HTTP status or Kafka error type, and its message.
function errorLine(e) {
  if (e.status !== undefined) return `${e.name} ${e.status} ${e.message}`
  if (e.type !== undefined) return `${e.name} ${e.type} ${e.message}`
  return `${e.name} ${e.message}`
}

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  let current = 'setup'
  try {
    check(await admin.createTopics({
      waitForLeaders: true,
      topics: cases.map((c) => ({
        topic: c.topic,
        numPartitions: 1,
        configEntries: [{ name: 'confluent.value.schema.validation', value: 'true' }],
      })),
    }), 'createTopics: not created')

    // Register (twice: the same schema keeps its id), look up, encode and
    // produce each type's records.
    const lines = new Map()
    for (const c of cases) {
      current = c.name
      const subject = `${c.topic}-value`
      const { id } = await registry.register(c.schema, { subject })
      const again = (await registry.register(c.schema, { subject })).id
      check(again === id, `${c.name}: registered again as id ${again}, first as ${id}`)
      const latest = await registry.getLatestSchemaId(subject)
      check(latest === id, `${c.name}: latest id ${latest}, want ${id}`)
      const lookup = await registry.getRegistryIdBySchema(subject, c.schema)
      check(lookup === id, `${c.name}: looked up as id ${lookup}, want ${id}`)
      c.id = id
      for (const p of c.payloads) {
        const value = await registry.encode(id, p)
        check(value[0] === 0 && value.readUInt32BE(1) === id, `${c.name}: encoded ${value.toString('hex')}, not magic byte 0 and id ${id}`)
        const [meta] = await producer.send({ topic: c.topic, acks: -1, messages: [{ value }] })
        check(meta.errorCode === 0, `${c.name}: produce: ${JSON.stringify(meta)}`)
      }
      lines.set(c.name, `id=${id} again=${again} latest=${latest} lookup=${lookup}`)
    }

    // An incompatible change under BACKWARD (register sets the subject's
    // level to BACKWARD the first time) is refused with Confluent's 409.
    current = 'avro-incompatible'
    let refusal = null
    try {
      await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroUserWithPhone) }, { subject: 'sr-avro-value' })
    } catch (e) {
      refusal = e
    }
    check(refusal !== null, 'an incompatible schema was registered')
    check(refusal.status === 409, `refused with status ${refusal.status}: ${refusal.message}`)
    check(await registry.getLatestSchemaId('sr-avro-value') === cases[0].id, 'the latest id changed after a refusal')
    console.log(`ok avro-incompatible ${errorLine(refusal)}`)

    // A compatible change gets a new id and becomes the latest; a record
    // written with it is produced too.
    current = 'avro-evolution'
    const evolved = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroUserWithCountry) }, { subject: 'sr-avro-value' })
    const evolvedLatest = await registry.getLatestSchemaId('sr-avro-value')
    check(evolved.id !== cases[0].id && evolvedLatest === evolved.id, `evolved id ${evolved.id}, latest ${evolvedLatest}, first ${cases[0].id}`)
    const edsger = { name: 'edsger', age: 72, email: null, country: 'nl' }
    const [meta] = await producer.send({ topic: 'sr-avro', acks: -1, messages: [{ value: await registry.encode(evolved.id, edsger) }] })
    check(meta.errorCode === 0, `produce: ${JSON.stringify(meta)}`)

    // The broker refuses a value whose id is not registered under the
    // topic's subject: an Avro schema's id on the JSON topic.
    current = 'wrong-subject'
    let invalid = null
    try {
      await producer.send({ topic: 'sr-json', acks: -1, messages: [{ value: await registry.encode(cases[0].id, cases[0].payloads[0]) }] })
    } catch (e) {
      invalid = e
    }
    check(invalid !== null, 'a value with another subject\'s schema id was accepted')
    console.log(`ok wrong-subject ${errorLine(invalid)}`)

    // Consume everything and decode it: the exact payloads, with each
    // record's writer schema fetched by id (a new registry, so from Gregor
    // rather than the encoder's cache).
    current = 'consume'
    const reader = new SchemaRegistry({ host: env('GREGOR_SCHEMA_REGISTRY'), clientId: 'gregor-compat-reader' })
    const got = await consume({ 'sr-avro': 4, 'sr-protobuf': 3, 'sr-json': 3 })
    for (const c of cases) {
      current = c.name
      const want = c.topic === 'sr-avro' ? [...c.payloads, edsger] : c.payloads
      const decoded = []
      for (const r of got.get(c.topic)) {
        decoded.push(JSON.stringify(await reader.decode(r.message.value)))
      }
      const wantJSON = want.map((p) => JSON.stringify(p))
      check(JSON.stringify(decoded) === JSON.stringify(wantJSON), `decoded ${decoded.join(' ')}, want ${wantJSON.join(' ')}`)
      console.log(`ok ${c.name} ${lines.get(c.name)} decoded ${decoded.join(' ')}`)
    }

    // The old records read with the evolved schema as the reader's: the
    // new field takes its default.
    current = 'avro-evolution'
    const withReader = []
    for (const r of got.get('sr-avro')) {
      withReader.push(JSON.stringify(await reader.decode(r.message.value, { [SchemaType.AVRO]: { readerSchema: avroUserWithCountry } })))
    }
    console.log(`ok avro-evolution id=${evolved.id} latest=${evolvedLatest} read as ${withReader.join(' ')}`)
  } catch (e) {
    console.log(`FAIL ${current}: ${e && e.stack ? e.stack : e}`)
    process.exitCode = 1
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
}

main().catch((e) => {
  console.log(`FAIL main: ${e && e.stack ? e.stack : e}`)
  process.exitCode = 1
})
