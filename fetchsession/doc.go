// Package fetchsession keeps a broker's incremental fetch sessions
// (KIP-227; Kafka's FetchSession and FetchSessionCache).
//
// A client that sends a full Fetch with session epoch 0 asks for a session:
// the broker answers with a session id and remembers every partition of
// the request with its fetch position and what the answer told the client
// of it (high watermark, log start offset). The client's next requests are
// incremental: they carry the session id and its epoch (1, 2, … wrapping
// to 1) and name only the partitions whose position changed, plus those
// to forget. The broker answers only the partitions with records, an
// error, a preferred read replica or a high watermark or log start offset
// the client has not heard yet. A follower replicating thousands of
// partitions from a leader so sends and receives a few bytes per idle
// fetch instead of every partition.
//
// Nor does the broker read every partition of the session on each
// request, as Kafka does: each partition watches its log (the broker's
// storage.Log.Watch; Partition.LogChanged), and a request reads only the
// partitions changed since one last read them (an append, a new high
// watermark or log start offset, a truncation, a change of the broker's
// leadership), those it names, and those whose last answer had an error,
// records or more than the response held. A request with nothing to say
// waits on the session (Session.Wake) rather than on every partition. The
// first incremental request after the full one reads every partition and
// starts the watching. A follower's position in a partition that is not
// read is where its last request naming it put it; its leader counts the
// session's fetches as fetches at that position (Partition.LastFetch,
// replication.FetchClock), so an idle follower stays in the ISR.
//
// What else an answer depends on is the caller's Cache.Stamp: a request
// whose stamp differs from its session's last reads every partition once
// (the broker stamps with its ACLs' revision, and stamps a rack-aware
// consumer's every request anew, as the preferred read replica follows
// the followers' progress).
//
// Epochs: 0 (InitialEpoch) closes the named session, if any, and asks for
// a new one; -1 (FinalEpoch) closes it and asks for none (a sessionless,
// full fetch). An incremental request of an unknown session is answered
// FETCH_SESSION_ID_NOT_FOUND, one with another epoch than the session
// expects INVALID_FETCH_SESSION_EPOCH, one whose Fetch version names
// topics differently (by id from v13, by name before) than the request that
// made the session FETCH_SESSION_TOPIC_ID_ERROR. An incremental request that
// leaves the session empty closes it and is answered without a session.
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions. When it is full a new session evicts one unused for two
// minutes, else the least valuable: followers' sessions are worth more
// than consumers', then larger ones more than smaller; a session that
// would be worth less than every other is not made and its client gets
// session id 0 (it keeps sending full fetches), as in Kafka.
//
// A request reads the changed partitions first, in the order they
// changed, then those it names (which it read last time, and has moved
// past), so that a response's byte limit does not keep serving the same
// partitions first.
package fetchsession
