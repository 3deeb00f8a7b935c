package broker

import "github.com/twmb/franz-go/pkg/kgo"

// decompressor is franz-go's: gzip, snappy (raw and xerial-framed), lz4
// frames and zstd, as Kafka clients write them.
var decompressor = kgo.DefaultDecompressor()

// decompress expands a compressed batch's records section. The storage
// layer uses it only to find exact record offsets and timestamps inside
// compressed batches (ListOffsets by timestamp).
func decompress(codec int8, src []byte) ([]byte, error) {
	return decompressor.Decompress(src, kgo.CompressionCodecType(codec))
}
