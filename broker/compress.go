package broker

import (
	"bytes"
	"errors"
	"strconv"
	"sync"

	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// decompressor is franz-go's: gzip, snappy (raw and xerial-framed), lz4
// frames and zstd, as Kafka clients write them.
var decompressor = kgo.DefaultDecompressor()

// decompress expands a compressed batch's records section. The storage
// layer uses it only to find exact record offsets and timestamps inside
// compressed batches (ListOffsets by timestamp).
func decompress(codec int8, src []byte) ([]byte, error) {
	return decompressor.Decompress(src, kgo.CompressionCodecType(codec))
}

// compress compresses a records section with codec for the cleaner.
func compress(codec int8, src []byte) ([]byte, error) {
	var c kgo.CompressionCodec
	switch codec {
	case storage.CodecGzip:
		c = kgo.GzipCompression()
	case storage.CodecSnappy:
		c = kgo.SnappyCompression()
	case storage.CodecLZ4:
		c = kgo.Lz4Compression()
	case storage.CodecZstd:
		c = kgo.ZstdCompression()
	default:
		return nil, errors.New("unknown codec " + strconv.Itoa(int(codec)))
	}
	ci, ok := compressors.Load(codec)
	if !ok {
		cc, err := kgo.DefaultCompressor(c)
		if err != nil {
			return nil, err
		}
		ci, _ = compressors.LoadOrStore(codec, cc)
	}
	var buf bytes.Buffer
	out, used := ci.(kgo.Compressor).Compress(&buf, src)
	if int8(used) != codec {
		return nil, errors.New("codec " + strconv.Itoa(int(codec)) + " not used")
	}
	return out, nil
}

// compressors caches a kgo.Compressor per codec (they are safe for
// concurrent use).
var compressors sync.Map
