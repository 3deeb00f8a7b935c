'use strict'
// kafkajs against Gregor's secured listeners; run by TestKafkajsSecurity
// (compat/kafkajs_test.go), which starts the broker and passes:
//
//   GREGOR_SASL_SSL, GREGOR_SSL  the listeners' host:port
//   GREGOR_CA                    the CA the broker's certificate is issued by
//   GREGOR_CLIENT_CERT, _KEY     a client certificate (the SSL listener requires one)
//   GREGOR_USER, GREGOR_PASS     a user with SCRAM-SHA-256/512 credentials
//
// Each case prints "ok <case> <detail>" once it passed; the first failure
// prints "FAIL <case>: <error>" and exits 1.

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const env = (k) => {
  const v = process.env[k]
  if (!v) throw new Error(`${k} is not set`)
  return v
}
const ca = [fs.readFileSync(env('GREGOR_CA'), 'utf8')]
const user = env('GREGOR_USER')
const pass = env('GREGOR_PASS')
const runID = `${process.pid}-${Date.now()}`

function client(name, broker, { ssl, sasl, retries = 5 }) {
  return new Kafka({
    clientId: `gregor-compat-${name}`,
    brokers: [broker],
    ssl,
    sasl,
    logLevel: process.env.KAFKAJS_LOG === '1' ? logLevel.INFO : logLevel.NOTHING,
    connectionTimeout: 5000,
    authenticationTimeout: 5000,
    requestTimeout: 15000,
    retry: { retries, initialRetryTime: 100, maxRetryTime: 1000 },
  })
}

function check(cond, what) {
  if (!cond) throw new Error(what)
}

// An unsecured JWS ({"alg":"none"}) for the broker's unsecured OAUTHBEARER validator.
function unsecuredJWT(sub, lifeSeconds) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return `${b64({ alg: 'none' })}.${b64({ sub, iat: now, exp: now + lifeSeconds })}.`
}

const partitions = 2
const perPartition = 5

// roundTrip creates a topic with two partitions, produces ten records with
// keys, values and headers (one with a null key) to chosen partitions, checks
// the offsets the producer is given, consumes them all with a consumer group
// from the beginning (exact keys, values, headers, partitions, offsets),
// commits, and reads the group's committed offsets back through the admin
// client.
async function roundTrip(name, kafka) {
  const topic = `kafkajs-${name}-${runID}`
  const groupId = `${topic}-group`
  const admin = kafka.admin()
  await admin.connect()
  try {
    check(await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true }),
      `createTopics ${topic}: not created`)

    const want = []
    for (let i = 0; i < partitions * perPartition; i++) {
      want.push({
        partition: i % partitions,
        offset: String(Math.floor(i / partitions)),
        key: i === 3 ? null : `key-${i}`,
        value: `value-${i}-${name}`,
        headers: { idx: String(i), kind: i % 2 === 0 ? 'even' : 'odd' },
      })
    }
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    try {
      // One send per record, in order, so each gets the next offset of its partition.
      for (const w of want) {
        const meta = await producer.send({
          topic,
          acks: -1,
          messages: [{ partition: w.partition, key: w.key, value: w.value, headers: w.headers }],
        })
        check(meta.length === 1 && meta[0].topicName === topic && meta[0].partition === w.partition &&
          meta[0].errorCode === 0 && meta[0].baseOffset === w.offset,
        `send ${w.value}: metadata ${JSON.stringify(meta)}, want partition ${w.partition} baseOffset ${w.offset}`)
      }
    } finally {
      await producer.disconnect()
    }

    const got = new Map()
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 200 })
    await consumer.connect()
    try {
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      const done = new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`consumed ${got.size} of ${want.length} records in 20 s`)), 20000)
        consumer.run({
          autoCommit: false,
          eachMessage: async ({ topic: tp, partition, message }) => {
            const k = `${partition}:${message.offset}`
            if (got.has(k)) {
              clearTimeout(timer)
              reject(new Error(`record ${tp}/${k} delivered twice`))
              return
            }
            got.set(k, { topic: tp, partition, message })
            if (got.size === want.length) {
              clearTimeout(timer)
              resolve()
            }
          },
        }).catch(reject)
      })
      await done
      for (const w of want) {
        const g = got.get(`${w.partition}:${w.offset}`)
        check(g, `record ${w.value} (partition ${w.partition} offset ${w.offset}) not consumed`)
        const m = g.message
        check(g.topic === topic, `record ${w.value}: topic ${g.topic}`)
        check(w.key === null ? m.key === null : m.key !== null && m.key.toString() === w.key,
          `record at ${w.partition}:${w.offset}: key ${m.key}, want ${w.key}`)
        check(m.value.toString() === w.value, `record at ${w.partition}:${w.offset}: value ${m.value}, want ${w.value}`)
        const hs = Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, v.toString()]))
        check(JSON.stringify(hs) === JSON.stringify(w.headers),
          `record at ${w.partition}:${w.offset}: headers ${JSON.stringify(hs)}, want ${JSON.stringify(w.headers)}`)
      }
      const commit = []
      for (let p = 0; p < partitions; p++) commit.push({ topic, partition: p, offset: String(perPartition) })
      await consumer.commitOffsets(commit)
    } finally {
      await consumer.disconnect()
    }

    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] })
    const offs = committed.partitions.map((p) => `${p.partition}=${p.offset}`).sort().join(',')
    const wantOffs = Array.from({ length: partitions }, (_, p) => `${p}=${perPartition}`).join(',')
    check(committed.topic === topic && offs === wantOffs, `committed offsets ${offs}, want ${wantOffs}`)
    console.log(`ok ${name} ${want.length} records, committed ${offs}`)
  } finally {
    await admin.disconnect()
  }
}

// refused connects with credentials the broker must refuse and returns the
// error, which must be kafkajs's KafkaJSSASLAuthenticationError.
async function refused(name, kafka) {
  const producer = kafka.producer()
  let err = null
  try {
    await producer.connect()
  } catch (e) {
    err = e
  } finally {
    await producer.disconnect().catch(() => {})
  }
  check(err !== null, `${name}: connected`)
  check(err.name === 'KafkaJSSASLAuthenticationError', `${name}: ${err.name}: ${err.message}, want KafkaJSSASLAuthenticationError`)
  console.log(`ok ${name} ${err.name}: ${err.message}`)
}

// refusedToken connects with an OAUTHBEARER token the broker must refuse.
// kafkajs does not read the server's error challenge ({"status":"invalid_token"}
// in a SaslAuthenticate response without an error code, RFC 7628 section
// 3.2.2): it takes it for success, so connect() resolves. Its next request
// is not the 0x01 that would end the exchange, so the broker (as Kafka's
// SaslServerAuthenticator does) closes the connection: the send must fail
// and nothing may be written.
async function refusedToken(name, kafka) {
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  let err = null
  try {
    await producer.connect()
    await producer.send({ topic: `kafkajs-${name}-${runID}`, messages: [{ value: 'must not be written' }] })
  } catch (e) {
    err = e
  } finally {
    await producer.disconnect().catch(() => {})
  }
  check(err !== null, `${name}: sent`)
  const cause = err.originalError ? ` (${err.originalError.name}: ${err.originalError.message})` : ''
  console.log(`ok ${name} ${err.name}: ${err.message}${cause}`)
}

const saslSSL = env('GREGOR_SASL_SSL')
const cases = [
  ['sasl-ssl-plain', () => roundTrip('sasl-ssl-plain',
    client('plain', saslSSL, { ssl: { ca }, sasl: { mechanism: 'plain', username: user, password: pass } }))],
  ['sasl-ssl-scram-sha-512', () => roundTrip('sasl-ssl-scram-sha-512',
    client('scram512', saslSSL, { ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: user, password: pass } }))],
  ['sasl-ssl-oauthbearer', () => roundTrip('sasl-ssl-oauthbearer',
    client('oauth', saslSSL, { ssl: { ca }, sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: unsecuredJWT(user, 3600) }) } }))],
  ['ssl', () => roundTrip('ssl',
    client('ssl', env('GREGOR_SSL'), { ssl: { ca, cert: fs.readFileSync(env('GREGOR_CLIENT_CERT'), 'utf8'), key: fs.readFileSync(env('GREGOR_CLIENT_KEY'), 'utf8') } }))],
  ['plain-wrong-password', () => refused('plain-wrong-password',
    client('plain-bad', saslSSL, { ssl: { ca }, sasl: { mechanism: 'plain', username: user, password: 'wrong' } }))],
  ['scram-sha-512-wrong-password', () => refused('scram-sha-512-wrong-password',
    client('scram512-bad', saslSSL, { ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: user, password: 'wrong' } }))],
  ['oauthbearer-expired', () => refusedToken('oauthbearer-expired',
    client('oauth-bad', saslSSL, { retries: 1, ssl: { ca }, sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: unsecuredJWT(user, -60) }) } }))],
]

async function main() {
  const only = process.env.KAFKAJS_CASES ? process.env.KAFKAJS_CASES.split(',') : null
  for (const [name, run] of cases) {
    if (only && !only.includes(name)) continue
    const start = Date.now()
    try {
      await run()
    } catch (e) {
      console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`)
      process.exit(1)
    }
    console.error(`${name}: ${Date.now() - start} ms`)
  }
}

main()
