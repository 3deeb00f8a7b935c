package broker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gregor-broker/gregor/storage"
)

// producerIDBlock is how many producer ids are reserved per durable write,
// as Kafka's controller hands out blocks of 1000.
const producerIDBlock = 1000

// producerIDs hands out producer ids that are never reused, even across a
// crash: the end of the current block is persisted before any id in it is
// returned.
type producerIDs struct {
	mu       sync.Mutex
	path     string
	next     int64
	blockEnd int64
	// reserve, in a cluster, reserves the next block in etcd instead of
	// the local file, so that no two brokers hand out the same id; every
	// id of the block above floor.
	reserve func(floor int64) (first, size int64, err error)
	// floor, when set, is the highest producer id a cluster link mirrored
	// (link.Store.ProducerIDFloor): ids are handed out above it.
	floor func() int64
}

func (p *producerIDs) open(path string) error {
	p.path = path
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%s: bad producer id block %q", path, data)
	}
	p.next, p.blockEnd = n, n
	return nil
}

// allocate returns a new producer id.
func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	floor := int64(-1)
	if p.floor != nil {
		floor = p.floor()
	}
	if p.next <= floor {
		p.next = floor + 1 // past the block too, perhaps: then a new one
	}
	if p.next >= p.blockEnd && p.reserve != nil {
		first, size, err := p.reserve(floor)
		if err != nil {
			return -1, fmt.Errorf("reserve producer id block: %w", err)
		}
		p.next, p.blockEnd = first, first+size
	}
	if p.next >= p.blockEnd {
		end := p.next + producerIDBlock
		if err := storage.WriteFileAtomic(p.path, []byte(strconv.FormatInt(end, 10)+"\n")); err != nil {
			return -1, fmt.Errorf("persist producer id block: %w", err)
		}
		p.blockEnd = end
	}
	id := p.next
	p.next++
	return id, nil
}
