package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultSessionTimeout is the broker lease TTL used when
// JoinConfig.SessionTimeout is zero. A dead broker's lease expires at most 3 s
// after its last renewal, and etcd looks for expired leases every 500 ms, so
// its partitions move within 2.3-3.5 s; when the broker also hosted etcd's
// raft leader, etcd's election (0.5-1 s) and the lease extension a new raft
// leader grants (0.5 s) come first, 4-5.5 s in all. Both stay under the 6 s
// the project aims for.
const DefaultSessionTimeout = 3 * time.Second

// Voter is one embedded etcd member, as listed in controller.quorum.voters:
// node NodeID runs it and its raft peers reach it at http://Host:Port.
type Voter struct {
	NodeID int32
	Host   string
	Port   int32
}

// PeerURL is the etcd peer URL of the voter.
func (v Voter) PeerURL() string {
	return "http://" + net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port)))
}

// JoinConfig is what a broker gives the metadata quorum it joins (package
// cluster runs it on etcd).
type JoinConfig struct {
	// NodeID is this broker's node.id.
	NodeID int32
	// Voters are the nodes that run embedded etcd members
	// (controller.quorum.voters). If NodeID is among them this node starts
	// its member and talks to it in-process.
	Voters []Voter
	// Endpoints are the client URLs of an external etcd cluster
	// (etcd.endpoints); used instead of Voters when set.
	Endpoints []string
	// PeerListen is the host:port the embedded member binds for its raft
	// peers when that differs from its voter address (the broker's
	// CONTROLLER listener, named by controller.listener.names, as a KRaft
	// controller binds it while controller.quorum.voters holds the address
	// the others dial); an empty host binds every interface. Empty: the
	// member binds its voter address. Either way it advertises the voter
	// address.
	PeerListen string
	// DataDir holds the embedded member's data under DataDir/__etcd.
	DataDir string
	// Host and Port are the Kafka address this broker advertises.
	Host string
	Port int32
	// Listeners are the advertised addresses of all the broker's listeners
	// by listener name (Host and Port are the inter-broker listener's);
	// registered so that each broker can tell a client the address of the
	// listener it came in on.
	Listeners map[string]Endpoint
	// Rack is broker.rack; replica placement spreads replicas over racks.
	Rack string
	// SchemaRegistry is the URL of this broker's schema registry listener
	// (Broker.SchemaRegistry); empty without one.
	SchemaRegistry string
	// SessionTimeout is the TTL of the broker's lease
	// (broker.session.timeout.ms), rounded up to whole seconds;
	// DefaultSessionTimeout when zero.
	SessionTimeout time.Duration
	// UncleanLeaderElection (unclean.leader.election.enable) lets the
	// controller elect a live replica outside the ISR when no ISR member is
	// alive, accepting the loss of acknowledged records.
	UncleanLeaderElection bool
	// ClusterID is stored if etcd has no cluster id yet; otherwise the
	// stored one wins (the store's cluster id is the one the broker adopts).
	ClusterID string
	// Logger receives the node's log and etcd's warnings; slog.Default()
	// when nil.
	Logger *slog.Logger
}

// ParseVoters parses controller.quorum.voters, a comma-separated list of
// id@host:port, such as "1@127.0.0.1:9192,2@127.0.0.1:9193".
func ParseVoters(s string) ([]Voter, error) {
	var vs []Voter
	seen := map[int32]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("cluster: voter %q: want id@host:port", item)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("cluster: voter %q: bad node id", item)
		}
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: voter %q: %w", item, err)
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil || port == 0 || host == "" {
			return nil, fmt.Errorf("cluster: voter %q: bad host:port", item)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("cluster: voter id %d listed twice", id)
		}
		seen[int32(id)] = true
		vs = append(vs, Voter{NodeID: int32(id), Host: host, Port: int32(port)})
	}
	if len(vs) == 0 {
		return nil, errors.New("cluster: no voters")
	}
	return vs, nil
}

// QuorumState is the metadata quorum as Kafka's DescribeQuorum describes
// its KRaft quorum, in etcd's terms: the raft leader and term, the commit
// index as the high watermark, and each member's raft index as its log
// end offset.
type QuorumState struct {
	// LeaderID is the node id of the raft leader's member, -1 if there is
	// none (an election is under way).
	LeaderID int32
	// LeaderEpoch is the raft term.
	LeaderEpoch int64
	// HighWatermark is the raft commit index as the answering member
	// knows it (the leader's, when the leader answers).
	HighWatermark int64
	// Voters are the raft members (learners excluded), by node id;
	// Observers the registered brokers that are not members.
	Voters, Observers []ReplicaState
}

// ReplicaState is one member or observer of the quorum.
type ReplicaState struct {
	NodeID int32
	// LogEndOffset is the member's raft index, -1 if unknown.
	LogEndOffset int64
	// LastFetch is when the leader last heard from the member and
	// LastCaughtUp when the member was last known to hold everything
	// committed; zero if unknown.
	LastFetch, LastCaughtUp time.Time
	// Host and Port are the member's raft peer address (a voter's
	// CONTROLLER endpoint), empty for observers.
	Host string
	Port int32
}
