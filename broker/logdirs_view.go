package broker

// Log directory usage for the admin console's /brokers page: this
// broker's from its own partitions and file system, the other live
// brokers' by a DescribeLogDirs request to each (the inter-broker
// listener's identity; the console checks its caller's DESCRIBE on the
// CLUSTER first, which DescribeLogDirs needs).

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LogDirUsage is one broker's log directory.
type LogDirUsage struct {
	Broker int32
	Dir    string // absolute path
	// SizeBytes is the bytes of the broker's partitions' segment files
	// (DescribeLogDirs' partition sizes summed).
	SizeBytes  int64
	Partitions int
	// TotalBytes and UsableBytes are the file system's size and the bytes
	// an unprivileged user may still write (-1: unknown).
	TotalBytes, UsableBytes int64
	Err                     string // why the broker could not be asked
}

// LogDirs returns the log directory of every live broker, sorted by
// broker id. A broker that does not answer gets Err and -1 sizes.
func (b *Broker) LogDirs(ctx context.Context) []LogDirUsage {
	brokers, _ := b.brokersView()
	out := make([]LogDirUsage, len(brokers))
	var wg sync.WaitGroup
	for i, br := range brokers {
		if br.id == b.nodeID {
			out[i] = b.localLogDir()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = b.peerLogDir(ctx, br.id)
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(x, y LogDirUsage) int { return int(x.Broker) - int(y.Broker) })
	return out
}

func (b *Broker) localLogDir() LogDirUsage {
	u := LogDirUsage{Broker: b.nodeID, Dir: b.cfg.DataDir}
	if abs, err := filepath.Abs(u.Dir); err == nil {
		u.Dir = abs
	}
	u.TotalBytes, u.UsableBytes = diskSpace(u.Dir)
	for _, p := range b.allPartitions() {
		u.SizeBytes += p.log.Size()
		u.Partitions++
	}
	return u
}

func (b *Broker) peerLogDir(ctx context.Context, id int32) LogDirUsage {
	u := LogDirUsage{Broker: id, SizeBytes: -1, TotalBytes: -1, UsableBytes: -1}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	kresp, err := b.peerRequest(ctx, id, req)
	if err != nil {
		u.Err = err.Error()
		return u
	}
	resp := kresp.(*kmsg.DescribeLogDirsResponse)
	if resp.ErrorCode != 0 {
		u.Err = kerr.ErrorForCode(resp.ErrorCode).Error()
		return u
	}
	if len(resp.Dirs) == 0 {
		u.Err = "no log directory in the answer"
		return u
	}
	if len(resp.Dirs) > 1 {
		u.Err = fmt.Sprintf("%d log directories; the first is shown", len(resp.Dirs))
	}
	d := resp.Dirs[0]
	if d.ErrorCode != 0 {
		u.Err = kerr.ErrorForCode(d.ErrorCode).Error()
	}
	u.Dir, u.TotalBytes, u.UsableBytes, u.SizeBytes = d.Dir, d.TotalBytes, d.UsableBytes, 0
	for _, t := range d.Topics {
		for _, p := range t.Partitions {
			u.SizeBytes += p.Size
			u.Partitions++
		}
	}
	return u
}
