package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/jsonstr"
)

// decodeBatchFast decodes the common batch, the one EncodeBatch writes, without reflection:
// encoding/json spent about 5 µs of the control plane's CPU per record (RESULTS.md). It answers ok false for anything it does not read exactly as
// encoding/json would (a null, a key in another case or twice, a number with a fraction, an
// unknown field, bad JSON), and DecodeBatch then decodes the body with encoding/json, whose
// verdict and errors stand. So it only ever takes a shortcut, never a decision.
//
// Strings with escapes are decoded by encoding/json one by one; a body that is not valid UTF-8
// is the strict path's (which refuses it, naming the field). Short values
// that repeat within a batch (users, groups, statuses, parameterized SQL) are allocated once.
func decodeBatchFast(data []byte) (b *QueryRecordBatchV1, ok bool) {
	if !utf8.Valid(data) { // encoding/json would take it altered; the strict path refuses it
		return nil, false
	}
	s := &scanner{data: data, interned: map[string]string{}}
	b = &QueryRecordBatchV1{}
	if !s.consume('{') {
		return nil, false
	}
	var seen [3]bool
	for first := true; ; first = false {
		if first && s.consume('}') {
			break
		}
		if !first && !s.comma('}') {
			if s.err {
				return nil, false
			}
			break
		}
		key, ok := s.key()
		if !ok {
			return nil, false
		}
		switch string(key) {
		case "batchId":
			ok = !seen[0]
			seen[0] = true
			b.BatchID, ok = s.str(false, ok)
		case "worker":
			ok = !seen[1]
			seen[1] = true
			b.Worker, ok = s.str(false, ok)
		case "records":
			ok = !seen[2]
			seen[2] = true
			b.Records, ok = s.records(ok)
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
	}
	s.skipSpace()
	if s.i != len(s.data) {
		return nil, false
	}
	return b, true
}

// scanner reads JSON from data at i. A method that finds what it does not handle sets err (or
// answers false); the caller then gives up.
type scanner struct {
	data     []byte
	i        int
	err      bool
	interned map[string]string
}

// internMax bounds the values that are interned: longer ones rarely repeat.
const internMax = 4096

func (s *scanner) skipSpace() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips space and c, reporting whether c was there.
func (s *scanner) consume(c byte) bool {
	s.skipSpace()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// comma reads the separator after a member or element: true for ",", false for end (which it
// consumes); anything else sets err and answers false.
func (s *scanner) comma(end byte) bool {
	s.skipSpace()
	if s.i < len(s.data) {
		switch s.data[s.i] {
		case ',':
			s.i++
			return true
		case end:
			s.i++
			return false
		}
	}
	s.err = true
	return false
}

// key reads an object key and its colon. Keys with escapes are left to encoding/json.
func (s *scanner) key() ([]byte, bool) {
	raw, plain, ok := s.rawString()
	if !ok || !plain || !s.consume(':') {
		return nil, false
	}
	return raw, true
}

// rawString reads a JSON string and returns the bytes between its quotes; plain says they need
// no decoding (no escapes, valid UTF-8). A control character (invalid JSON) is not ok.
func (s *scanner) rawString() (raw []byte, plain, ok bool) {
	s.skipSpace()
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	plain = true
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.i = i + 1
			raw = s.data[start:i]
			return raw, plain && utf8.Valid(raw), true
		case c == '\\':
			plain = false
			i++ // the escaped byte; \uXXXX's digits are plain bytes
		case c < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

// str reads a string value; intern shares repeated values. ok false (from the caller or here)
// passes through.
func (s *scanner) str(intern, ok bool) (string, bool) {
	if !ok {
		return "", false
	}
	start := s.i
	raw, plain, ok := s.rawString()
	if !ok {
		return "", false
	}
	if !plain {
		var v string
		if json.Unmarshal(s.data[start:s.i], &v) != nil {
			return "", false
		}
		return v, true
	}
	if !intern || len(raw) > internMax {
		return string(raw), true
	}
	if v, ok := s.interned[string(raw)]; ok {
		return v, true
	}
	v := string(raw)
	s.interned[v] = v
	return v, true
}

// int reads an integer as encoding/json reads one into an int64: a JSON number without
// fraction or exponent that fits.
func (s *scanner) int(ok bool) (int64, bool) {
	if !ok {
		return 0, false
	}
	s.skipSpace()
	start, i := s.i, s.i
	if i < len(s.data) && s.data[i] == '-' {
		i++
	}
	digits := i
	for i < len(s.data) && s.data[i] >= '0' && s.data[i] <= '9' {
		i++
	}
	if i == digits || s.data[digits] == '0' && i-digits > 1 {
		return 0, false // no digits, or a leading zero (invalid JSON)
	}
	if i < len(s.data) && (s.data[i] == '.' || s.data[i] == 'e' || s.data[i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s.data[start:i]), 10, 64)
	if err != nil {
		return 0, false
	}
	s.i = i
	return v, true
}

func (s *scanner) bool(ok bool) (bool, bool) {
	if !ok {
		return false, false
	}
	s.skipSpace()
	for _, lit := range []string{"true", "false"} {
		if len(s.data)-s.i >= len(lit) && string(s.data[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return lit == "true", true
		}
	}
	return false, false
}

// time reads a time as encoding/json does: time.Time's own UnmarshalJSON on the quoted string.
func (s *scanner) time(ok bool) (time.Time, bool) {
	var t time.Time
	if !ok {
		return t, false
	}
	start := s.i
	if _, _, ok := s.rawString(); !ok {
		return t, false
	}
	return t, t.UnmarshalJSON(s.data[start:s.i]) == nil
}

// strings reads an array of strings (never null: that is left to encoding/json).
func (s *scanner) strings(ok bool) ([]string, bool) {
	if !ok || !s.consume('[') {
		return nil, false
	}
	out := []string{}
	if s.consume(']') {
		return out, true
	}
	for {
		v, ok := s.str(true, true)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if !s.comma(']') {
			return out, !s.err
		}
	}
}

func (s *scanner) records(ok bool) ([]Record, bool) {
	if !ok || !s.consume('[') {
		return nil, false
	}
	// Every record of EncodeBatch's starts so ('{"' cannot occur inside a JSON string).
	out := make([]Record, 0, min(bytes.Count(s.data[s.i:], []byte(`{"queryId":`)), BatchRecordsMax+1))
	if s.consume(']') {
		return out, true
	}
	for {
		out = append(out, Record{})
		if !s.record(&out[len(out)-1]) {
			return nil, false
		}
		if !s.comma(']') {
			return out, !s.err
		}
	}
}

// Record fields, for spotting one given twice.
const (
	fQueryID = iota
	fWorker
	fUser
	fProtocol
	fGroup
	fCluster
	fSQL
	fSQLDigest
	fStatus
	fErrorCode
	fError
	fQueueMs
	fExecMs
	fRows
	fBytes
	fCacheHit
	fRoutingTrace
	fStartedAt
	fEndedAt
	fieldCount
)

func (s *scanner) record(r *Record) bool {
	if !s.consume('{') {
		return false
	}
	var seen [fieldCount]bool
	for first := true; ; first = false {
		if first && s.consume('}') {
			return true
		}
		if !first && !s.comma('}') {
			return !s.err
		}
		key, ok := s.key()
		if !ok {
			return false
		}
		f := recordField(key)
		if f < 0 || seen[f] {
			return false
		}
		seen[f] = true
		var status string
		switch f {
		case fQueryID:
			r.QueryID, ok = s.str(false, ok)
		case fWorker:
			r.Worker, ok = s.str(true, ok)
		case fUser:
			r.User, ok = s.str(true, ok)
		case fProtocol:
			r.Protocol, ok = s.str(true, ok)
		case fGroup:
			r.Group, ok = s.str(true, ok)
		case fCluster:
			r.Cluster, ok = s.str(true, ok)
		case fSQL:
			r.SQL, ok = s.str(true, ok)
		case fSQLDigest:
			r.SQLDigest, ok = s.str(true, ok)
		case fStatus:
			status, ok = s.str(true, ok)
			r.Status = Status(status)
		case fErrorCode:
			r.ErrorCode, ok = s.str(true, ok)
		case fError:
			r.Error, ok = s.str(false, ok)
		case fQueueMs:
			r.QueueMs, ok = s.int(ok)
		case fExecMs:
			r.ExecMs, ok = s.int(ok)
		case fRows:
			r.Rows, ok = s.int(ok)
		case fBytes:
			r.Bytes, ok = s.int(ok)
		case fCacheHit:
			r.CacheHit, ok = s.bool(ok)
		case fRoutingTrace:
			r.RoutingTrace, ok = s.strings(ok)
		case fStartedAt:
			r.StartedAt, ok = s.time(ok)
		case fEndedAt:
			r.EndedAt, ok = s.time(ok)
		}
		if !ok {
			return false
		}
	}
}

// recordField is the field a key names exactly (Record's JSON tags), or -1.
func recordField(key []byte) int {
	switch string(key) {
	case "queryId":
		return fQueryID
	case "worker":
		return fWorker
	case "user":
		return fUser
	case "protocol":
		return fProtocol
	case "group":
		return fGroup
	case "cluster":
		return fCluster
	case "sql":
		return fSQL
	case "sqlDigest":
		return fSQLDigest
	case "status":
		return fStatus
	case "errorCode":
		return fErrorCode
	case "error":
		return fError
	case "queueMs":
		return fQueueMs
	case "execMs":
		return fExecMs
	case "rows":
		return fRows
	case "bytes":
		return fBytes
	case "cacheHit":
		return fCacheHit
	case "routingTrace":
		return fRoutingTrace
	case "startedAt":
		return fStartedAt
	case "endedAt":
		return fEndedAt
	}
	return -1
}

// appendBatch appends b as JSON, byte for byte what encoding/json writes for it (Record's tags,
// HTML-safe escapes, invalid UTF-8 as \ufffd), without reflection: the worker encodes every
// query's record once.
func appendBatch(dst []byte, b *QueryRecordBatchV1) []byte {
	dst = append(dst, `{"batchId":`...)
	dst = appendString(dst, b.BatchID)
	dst = append(dst, `,"worker":`...)
	dst = appendString(dst, b.Worker)
	dst = append(dst, `,"records":`...)
	if b.Records == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range b.Records {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendRecord(dst, &b.Records[i])
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func appendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"queryId":`...)
	dst = appendString(dst, r.QueryID)
	for _, f := range [...]struct {
		key, value string
		omitEmpty  bool
	}{
		{`,"worker":`, r.Worker, false}, {`,"user":`, r.User, false}, {`,"protocol":`, r.Protocol, false},
		{`,"group":`, r.Group, false}, {`,"cluster":`, r.Cluster, false}, {`,"sql":`, r.SQL, true},
		{`,"sqlDigest":`, r.SQLDigest, true}, {`,"status":`, string(r.Status), false},
		{`,"errorCode":`, r.ErrorCode, true}, {`,"error":`, r.Error, true},
	} {
		if f.omitEmpty && f.value == "" {
			continue
		}
		dst = append(dst, f.key...)
		dst = appendString(dst, f.value)
	}
	dst = append(dst, `,"queueMs":`...)
	dst = strconv.AppendInt(dst, r.QueueMs, 10)
	dst = append(dst, `,"execMs":`...)
	dst = strconv.AppendInt(dst, r.ExecMs, 10)
	dst = append(dst, `,"rows":`...)
	dst = strconv.AppendInt(dst, r.Rows, 10)
	dst = append(dst, `,"bytes":`...)
	dst = strconv.AppendInt(dst, r.Bytes, 10)
	dst = append(dst, `,"cacheHit":`...)
	dst = strconv.AppendBool(dst, r.CacheHit)
	if len(r.RoutingTrace) > 0 {
		dst = append(dst, `,"routingTrace":[`...)
		for i, s := range r.RoutingTrace {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, s)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"startedAt":`...)
	dst = appendTime(dst, r.StartedAt)
	dst = append(dst, `,"endedAt":`...)
	dst = appendTime(dst, r.EndedAt)
	return append(dst, '}')
}

// appendTime is time.Time's MarshalJSON, appended; like encoding/json it refuses (here: panics,
// as EncodeBatch always did) a time RFC 3339 cannot hold. Record times come from the clock.
func appendTime(dst []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		panic(fmt.Sprintf("history: encoding a batch: time %v: year outside of range [0,9999]", t))
	}
	if _, off := t.Zone(); off <= -24*3600 || off >= 24*3600 {
		panic(fmt.Sprintf("history: encoding a batch: time %v: timezone hour outside of range [0,23]", t))
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendString is encoding/json's string encoding with HTML escaping, as json.Marshal does it.
func appendString(dst []byte, s string) []byte { return jsonstr.AppendString(dst, s, true) }
