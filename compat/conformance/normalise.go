package conformance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Normalisation: an answer (a kmsg response, or any value a scenario builds
// from several) becomes sorted "path=value" lines. What legitimately differs
// between two brokers is dropped or replaced by a marker; everything else
// (error codes, offsets, record contents, which fields are set) is kept.

// dropped keys: never compared.
var dropped = map[string]bool{
	"ThrottleMillis": true,
	"ErrorMessage":   true, // free text
	"UnknownTags":    true,
	"Version":        true, // the request's own, equal on both sides
}

// nowTS: a timestamp at or after it (2023-11) is the broker's clock, shown
// as <now>; hand-built batches use baseTS (2020).
const nowTS = 1_700_000_000_000

// arrayKeys name the element field an array of objects is keyed by instead
// of its index (order is not compared), in order of preference.
var arrayKeys = []string{"Topic", "Name", "ConfigName", "Group", "TransactionalID", "ResourceName", "User", "Partition", "ApiKey", "Key"}

// normalise turns v into sorted lines.
func normalise(v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		return []string{"marshal error: " + err.Error()}
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return []string{"unmarshal error: " + err.Error()}
	}
	var lines []string
	walk("", "", tree, &lines)
	sort.Strings(lines)
	return lines
}

func walk(path, key string, v any, out *[]string) {
	if dropped[key] {
		return
	}
	emit := func(s string) { *out = append(*out, path+"="+s) }
	switch x := v.(type) {
	case nil:
		emit("null")
	case map[string]any:
		if len(x) == 0 {
			emit("{}")
		}
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walk(p, k, e, out)
		}
	case []any:
		if isUUID(x) {
			emit(uuidMark(x))
			return
		}
		if len(x) == 0 {
			emit("[]")
			return
		}
		for i, e := range x {
			walk(path+"["+elemKey(e, i)+"]", "", e, out)
		}
	case string:
		if key == "RecordBatches" || key == "Records" {
			raw, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				emit("undecodable")
				return
			}
			vb := viewBatches(raw)
			if len(vb) == 0 {
				emit(fmt.Sprintf("<%d bytes, no batch>", len(raw)))
				return
			}
			b, _ := json.Marshal(vb)
			var tree any
			_ = json.Unmarshal(b, &tree)
			walk(path, "", tree, out)
			return
		}
		emit(strconv.Quote(markString(key, x)))
	case float64:
		emit(markNumber(key, x))
	case bool:
		emit(strconv.FormatBool(x))
	default:
		emit(fmt.Sprint(x))
	}
}

func elemKey(e any, i int) string {
	m, ok := e.(map[string]any)
	if !ok {
		return strconv.Itoa(i)
	}
	for _, k := range arrayKeys {
		switch kv := m[k].(type) {
		case string:
			return kv
		case float64:
			return strconv.FormatInt(int64(kv), 10)
		}
	}
	return strconv.Itoa(i)
}

func isUUID(x []any) bool {
	if len(x) != 16 {
		return false
	}
	for _, e := range x {
		if _, ok := e.(float64); !ok {
			return false
		}
	}
	return true
}

func uuidMark(x []any) string {
	for _, e := range x {
		if e.(float64) != 0 {
			return "<uuid>"
		}
	}
	return "<zero uuid>"
}

func markString(key, s string) string {
	if s == "" {
		return s
	}
	switch key {
	case "ClusterID", "Host", "LogDir", "Dir", "Rack":
		return "<" + strings.ToLower(key) + ">"
	case "MemberID", "Leader", "LeaderID", "MemberId", "ProducerId":
		return "<member>"
	}
	return s
}

func markNumber(key string, f float64) string {
	n := int64(f)
	switch {
	case strings.HasSuffix(key, "ErrorCode"):
		return errName(int16(n))
	case key == "Port" && n > 0:
		return "<port>"
	case (key == "ProducerID" || key == "ActiveProducerID") && n >= 0:
		return "<pid>"
	case key == "SessionID" && n != 0:
		return "<session>"
	case (strings.Contains(key, "Timestamp") || strings.Contains(key, "Time")) && !strings.Contains(key, "Timeout") && n >= nowTS:
		return "<now>"
	case (key == "Size" || key == "TotalBytes" || key == "UsableBytes") && n > 0:
		return "<size>"
	}
	return strconv.FormatInt(n, 10)
}

// errName is an error code's Kafka name.
func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("ERROR_%d", code)
}

// diffLines returns the lines only in a and only in b.
func diffLines(a, b []string) (onlyA, onlyB []string) {
	ia, ib := 0, 0
	for ia < len(a) || ib < len(b) {
		switch {
		case ib == len(b) || ia < len(a) && a[ia] < b[ib]:
			onlyA = append(onlyA, a[ia])
			ia++
		case ia == len(a) || b[ib] < a[ia]:
			onlyB = append(onlyB, b[ib])
			ib++
		default:
			ia++
			ib++
		}
	}
	return onlyA, onlyB
}
