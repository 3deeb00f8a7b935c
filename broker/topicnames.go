package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopicNameLength is Kafka's limit (249, so that "<topic>-<partition>"
// plus a deletion suffix fits in a 255-byte file name).
const maxTopicNameLength = 249

// validateTopicName applies Kafka's rules: [a-zA-Z0-9._-]{1,249}, not "."
// or "..". A failure is INVALID_TOPIC_EXCEPTION.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name cannot be %q", name)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("topic name is longer than %d characters", maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q contains an illegal character %q: only [a-zA-Z0-9._-] are allowed", name, c)
		}
	}
	if name == metaDirName {
		return fmt.Errorf("topic name %q is reserved", name)
	}
	return nil
}

var errInvalidTopic = kerr.InvalidTopicException
