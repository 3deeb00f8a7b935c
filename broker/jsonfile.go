package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/gregor-broker/gregor/storage"
)

// readJSONFile decodes the JSON file at path into v; false without error
// when there is no such file. A file that does not decode is an error
// naming path.
func readJSONFile(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// writeJSONFile replaces the file at path by v, indented JSON, with
// storage.WriteFileAtomic.
func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return storage.WriteFileAtomic(path, data)
}
