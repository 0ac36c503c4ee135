package trinohttp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/queryflux/queryflux/internal/jsonstr"
)

// appendResults appends res as encoding/json writes it with SetEscapeHTML(false) (marshal),
// byte for byte, without reflection for what every page carries: the hot path of a poll.
// columns is res.Columns already encoded (encodeColumns), nil when res has none.
func appendResults(b []byte, res *QueryResults, columns []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	if res.plainID { // written twice, and known to need no escapes (Server.plainIDs): ~800 instructions of a page
		b = append(append(append(b, '"'), res.ID...), '"')
	} else {
		b = appendString(b, res.ID)
	}
	b = append(b, `,"infoUri":`...)
	if res.InfoURI == "" && res.infoBase != "" && res.plainID {
		b = jsonstr.AppendContent(append(b, '"'), res.infoBase, false)
		b = append(append(append(b, "/ui/query.html?"...), res.ID...), '"')
	} else if res.InfoURI == "" && res.infoBase != "" {
		b = appendJoined(b, res.infoBase, "/ui/query.html?", res.ID)
	} else {
		b = appendString(b, res.InfoURI)
	}
	if res.NextURI != "" {
		b = append(b, `,"nextUri":`...)
		b = appendString(b, res.NextURI)
	}
	if len(res.Columns) > 0 {
		b = append(b, `,"columns":`...)
		b = append(b, columns...)
	}
	if len(res.Data) > 0 {
		b = append(b, `,"data":[`...)
		for i, row := range res.Data {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendArray(b, row); err != nil { // not appendValue: a row made an any is an allocation
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = appendStats(append(b, `,"stats":`...), &res.Stats)
	if res.Error != nil {
		raw, err := marshal(res.Error)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"error":`...), bytes.TrimSuffix(raw, []byte{'\n'})...)
	}
	if len(res.Warnings) > 0 { // the proxy raises none; encoding/json writes any it is given
		raw, err := marshal(res.Warnings)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"warnings":`...), bytes.TrimSuffix(raw, []byte{'\n'})...)
	} else if res.Warnings == nil {
		b = append(b, `,"warnings":null`...)
	} else {
		b = append(b, `,"warnings":[]`...)
	}
	if res.UpdateType != "" {
		b = append(b, `,"updateType":`...)
		b = appendString(b, res.UpdateType)
	}
	if res.UpdateCount != nil {
		b = append(b, `,"updateCount":`...)
		b = strconv.AppendInt(b, *res.UpdateCount, 10)
	}
	return append(b, "}\n"...), nil
}

// encodeColumns is the JSON of a query's columns, written once per query.
func encodeColumns(cols []Column) []byte {
	if len(cols) == 0 {
		return nil
	}
	raw, err := marshal(cols)
	if err != nil {
		panic("trinohttp: columns do not encode: " + err.Error())
	}
	return bytes.TrimSuffix(raw, []byte{'\n'})
}

func appendStats(b []byte, s *Stats) []byte {
	b = append(b, `{"state":`...)
	switch s.State { // a query's states need no escapes
	case stateQueued, stateRunning, stateFinished, stateFailed:
		b = append(append(append(b, '"'), s.State...), '"')
	default:
		b = appendString(b, s.State)
	}
	b = strconv.AppendBool(append(b, `,"queued":`...), s.Queued)
	b = strconv.AppendBool(append(b, `,"scheduled":`...), s.Scheduled)
	b = appendIntField(b, `,"nodes":`, int64(s.Nodes))
	// What the proxy never counts (splits, CPU and queued time, bytes, memory) is written as one
	// run of text when all of it is zero, as it is on every page the proxy makes: a field at a
	// time over an array of them was 1,600 instructions of a SELECT 1's page.
	if s.TotalSplits|s.QueuedSplits|s.RunningSplits|s.CompletedSplits == 0 && s.CPUTimeMillis == 0 {
		b = append(b, `,"totalSplits":0,"queuedSplits":0,"runningSplits":0,"completedSplits":0,"cpuTimeMillis":0`...)
	} else {
		b = appendIntField(b, `,"totalSplits":`, int64(s.TotalSplits))
		b = appendIntField(b, `,"queuedSplits":`, int64(s.QueuedSplits))
		b = appendIntField(b, `,"runningSplits":`, int64(s.RunningSplits))
		b = appendIntField(b, `,"completedSplits":`, int64(s.CompletedSplits))
		b = appendIntField(b, `,"cpuTimeMillis":`, s.CPUTimeMillis)
	}
	b = appendIntField(b, `,"wallTimeMillis":`, s.WallTimeMillis)
	b = appendIntField(b, `,"queuedTimeMillis":`, s.QueuedTimeMillis)
	b = appendIntField(b, `,"elapsedTimeMillis":`, s.ElapsedTimeMillis)
	b = appendIntField(b, `,"processedRows":`, s.ProcessedRows)
	if s.ProcessedBytes == 0 && s.PeakMemoryBytes == 0 {
		return append(b, `,"processedBytes":0,"peakMemoryBytes":0}`...)
	}
	b = appendIntField(b, `,"processedBytes":`, s.ProcessedBytes)
	b = appendIntField(b, `,"peakMemoryBytes":`, s.PeakMemoryBytes)
	return append(b, '}')
}

// appendIntField appends name (`,"field":`) and v; a digit is appended as itself.
func appendIntField(b []byte, name string, v int64) []byte {
	b = append(b, name...)
	if 0 <= v && v < 10 {
		return append(b, byte('0'+v))
	}
	return strconv.AppendInt(b, v, 10)
}

// appendValue appends one value of a row as rowsOf makes them; a type rowsOf never makes goes
// through encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case json.Number: // floatJSON's, always a valid number
		if v == "" {
			return append(b, '0'), nil
		}
		return append(b, v...), nil
	case []any:
		return appendArray(b, v)
	case map[string]any: // encoding/json writes a map's keys sorted
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			var err error
			if b, err = appendValue(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	raw, err := marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(raw, []byte{'\n'})...), nil
}

// appendArray appends a row, or an array value, as a JSON array.
func appendArray(b []byte, v []any) ([]byte, error) {
	b = append(b, '[')
	for i, e := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, e); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// plainText reports whether s goes out in JSON as it is (appendString writes it between its
// quotes unchanged): printable ASCII without '"' and '\\'. A query's id is (newID makes it of
// digits, hex and '_', and its owner's id: Server.plainIDs).
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendString appends s quoted as encoding/json quotes it with SetEscapeHTML(false) (marshal).
func appendString(b []byte, s string) []byte { return jsonstr.AppendString(b, s, false) }

// appendJoined appends the string a+b+c as appendString does, without making it (each part
// escaped as a string of its own).
func appendJoined(out []byte, a, b, c string) []byte {
	out = append(out, '"')
	for _, s := range [...]string{a, b, c} {
		out = jsonstr.AppendContent(out, s, false)
	}
	return append(out, '"')
}
