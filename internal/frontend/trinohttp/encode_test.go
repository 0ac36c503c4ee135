package trinohttp

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"pgregory.net/rapid"
)

// text draws strings that exercise the escapes: any bytes (invalid UTF-8 included), any runes,
// and the characters encoding/json treats specially.
func text() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
		rapid.Map(rapid.SliceOf(rapid.SampledFrom([]string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", "<", "&", "\u2028", "\u2029", "é", "\xff", "a"})),
			func(parts []string) string {
				s := ""
				for _, p := range parts {
					s += p
				}
				return s
			}),
	)
}

// count draws a statistic: as often zero (what the proxy leaves every page's splits at) or a
// digit as any other.
func count() *rapid.Generator[int64] {
	return rapid.OneOf(rapid.Just[int64](0), rapid.Int64Range(-1, 12), rapid.Int64())
}

// rowValue draws a value as rowsOf makes them, nested up to depth.
func rowValue(depth int) *rapid.Generator[any] {
	scalars := []*rapid.Generator[any]{
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(v bool) any { return v }),
		rapid.Map(rapid.Int64(), func(v int64) any { return v }),
		rapid.Map(rapid.Int32(), func(v int32) any { return v }),
		rapid.Map(rapid.Int16(), func(v int16) any { return v }),
		rapid.Map(rapid.Int8(), func(v int8) any { return v }),
		rapid.Map(rapid.Uint8(), func(v uint8) any { return v }),
		rapid.Map(rapid.Uint16(), func(v uint16) any { return v }),
		rapid.Map(rapid.Uint32(), func(v uint32) any { return v }),
		rapid.Map(text(), func(v string) any { return v }),
		rapid.Map(rapid.Float64(), func(v float64) any { return floatJSON(v, 64) }),
		rapid.Map(rapid.Float32(), func(v float32) any { return floatJSON(float64(v), 32) }),
	}
	if depth > 0 {
		scalars = append(scalars,
			rapid.Map(rapid.SliceOfN(rapid.Deferred(func() *rapid.Generator[any] { return rowValue(depth - 1) }), 0, 4),
				func(v []any) any { return v }),
			rapid.Map(rapid.MapOfN(text(), rapid.Deferred(func() *rapid.Generator[any] { return rowValue(depth - 1) }), 0, 4),
				func(v map[string]any) any { return v }),
		)
	}
	return rapid.OneOf(scalars...)
}

// TestAppendResultsIsEncodingJSON holds the hand-written page encoder to encoding/json's output,
// byte for byte, over every shape a page takes.
func TestAppendResultsIsEncodingJSON(t *testing.T) {
	columns := [][]Column{nil, {}, columnsFor(arrowSchemaForEncodeTest())}
	rapid.Check(t, func(t *rapid.T) {
		res := QueryResults{
			ID:      rapid.StringMatching(`[0-9a-z_]{0,30}`).Draw(t, "id"),
			InfoURI: text().Draw(t, "infoUri"),
			NextURI: rapid.OneOf(rapid.Just(""), text()).Draw(t, "nextUri"),
			Columns: rapid.SampledFrom(columns).Draw(t, "columns"),
			Data:    rapid.SliceOfN(rapid.SliceOfN(rowValue(2), 0, 5), 0, 5).Draw(t, "data"),
			Stats: Stats{
				State:  rapid.OneOf(rapid.SampledFrom([]string{stateQueued, stateRunning, stateFinished, stateFailed}), text()).Draw(t, "state"),
				Queued: rapid.Bool().Draw(t, "queued"), Scheduled: rapid.Bool().Draw(t, "scheduled"),
				Nodes: int(count().Draw(t, "nodes")), TotalSplits: int(count().Draw(t, "total")),
				QueuedSplits: int(count().Draw(t, "queuedSplits")), RunningSplits: int(count().Draw(t, "running")),
				CompletedSplits: int(count().Draw(t, "splits")), CPUTimeMillis: count().Draw(t, "cpu"),
				WallTimeMillis: count().Draw(t, "wall"), QueuedTimeMillis: count().Draw(t, "queuedTime"),
				ProcessedRows: count().Draw(t, "rows"), ElapsedTimeMillis: count().Draw(t, "elapsed"),
				ProcessedBytes: count().Draw(t, "bytes"), PeakMemoryBytes: count().Draw(t, "peak"),
			},
			Warnings:   rapid.SampledFrom([][]any{nil, {}, {"careful <&>"}}).Draw(t, "warnings"),
			UpdateType: rapid.OneOf(rapid.Just(""), text()).Draw(t, "updateType"),
		}
		if rapid.Bool().Draw(t, "failed") {
			res.Error = toQueryError(errors.New(text().Draw(t, "message")))
		}
		if rapid.Bool().Draw(t, "counted") {
			n := rapid.Int64().Draw(t, "count")
			res.UpdateCount = &n
		}
		want, err := marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendResults(nil, &res, encodeColumns(res.Columns))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("appendResults\n got %s\nwant %s", got, want)
		}
		var back map[string]any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("not JSON: %v: %s", err, got)
		}
	})
}

func arrowSchemaForEncodeTest() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s \"quoted\"", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64)},
		{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.FixedWidthTypes.Boolean})},
	}, nil)
}

// TestInfoURIWrittenFromItsParts: a page's infoUri made of its base and its id as it is written
// (appendJoined) is the one encoding/json writes of the whole string, whatever the strings.
func TestInfoURIWrittenFromItsParts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := "http://" + text().Draw(t, "host")
		id := rapid.OneOf(text(), rapid.StringMatching(`[0-9a-z_"\\]{0,30}`)).Draw(t, "id")
		got, err := appendResults(nil, &QueryResults{ID: id, infoBase: base, plainID: plainText(id)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := marshal(&QueryResults{ID: id, InfoURI: base + "/ui/query.html?" + id})
		if err != nil || string(got) != string(want) {
			t.Fatalf("appendResults wrote\n%s\nencoding/json\n%s (%v)", got, want, err)
		}
	})
}

// A text plainText passes goes out as it is, between its quotes, as encoding/json writes it;
// and every query id newID makes is one, so that its pages write it without escapes.
func TestPlainTextIsWrittenAsItIs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(text(), rapid.StringMatching(`[ -~]{0,20}`)).Draw(t, "s")
		if !plainText(s) {
			return
		}
		want, err := marshal(s)
		if err != nil || string(want) != `"`+s+`"`+"\n" {
			t.Fatalf("plainText(%q), but encoding/json writes %s", s, want)
		}
	})
	s, err := NewServer(frontendtest.NewBackend(countingEngine(1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		if id, _ := s.newID(time.Now()); !s.plainIDs || !plainText(id) {
			t.Fatalf("newID made %q (plainIDs %v), which plainText refuses", id, s.plainIDs)
		}
	}
}
