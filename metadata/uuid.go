package metadata

import "crypto/rand"

// NewUUID is a random version-4 UUID as Kafka's Uuid.randomUuid makes
// topic and cluster ids: never zero, and never one whose URL-safe base64
// text starts with '-', which command-line tools would take for an option.
func NewUUID() [16]byte {
	for {
		var u [16]byte
		rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u != ([16]byte{}) && u[0]>>2 != 62 { // 62 is '-' in URL-safe base64
			return u
		}
	}
}
