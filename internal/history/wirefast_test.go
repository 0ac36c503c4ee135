package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genText draws strings that exercise JSON's string rules: quotes, backslashes, control
// characters, HTML characters (escaped by encoding/json), non-ASCII, U+2028 and invalid UTF-8.
func genText() *rapid.Generator[string] {
	pieces := []string{"a", "SELECT 1", `"`, `\`, "\n", "\x00", "\x1f", "<", ">", "&", "é", "日本", "\u2028",
		"\xff", "\xc3", "'", "?", " ", "{", "}", "[", "]", ",", ":", "\\u0041"}
	return rapid.Custom(func(t *rapid.T) string {
		var s string
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 6).Draw(t, "pieces") {
			s += p
		}
		return s
	})
}

func genRecord(t *rapid.T) Record {
	text, name := genText(), rapid.SampledFrom([]string{"", "alice", "pg", "postgres", "g1", "c1", "w1"})
	zones := []*time.Location{time.UTC, time.FixedZone("", -7*3600), time.FixedZone("X", 5*3600+1800)}
	when := func(label string) time.Time {
		return time.Unix(rapid.Int64Range(-1e10, 1e10).Draw(t, label), rapid.Int64Range(0, 999_999_999).Draw(t, label+"Nanos")).
			In(rapid.SampledFrom(zones).Draw(t, label+"Zone"))
	}
	n := rapid.OneOf(rapid.Int64Range(-3, 3), rapid.Int64())
	r := Record{
		QueryID: rapid.OneOf(rapid.SampledFrom([]string{"q1", "0123456789abcdef"}), text).Draw(t, "queryId"),
		Worker:  name.Draw(t, "worker"), User: rapid.OneOf(name, text).Draw(t, "user"), Protocol: name.Draw(t, "protocol"),
		Group: name.Draw(t, "group"), Cluster: name.Draw(t, "cluster"), SQL: text.Draw(t, "sql"), SQLDigest: name.Draw(t, "digest"),
		Status:    Status(rapid.SampledFrom([]string{"succeeded", "failed", "cancelled", "rejected", "", "odd"}).Draw(t, "status")),
		ErrorCode: name.Draw(t, "errorCode"), Error: text.Draw(t, "error"),
		QueueMs: n.Draw(t, "queueMs"), ExecMs: n.Draw(t, "execMs"), Rows: n.Draw(t, "rows"), Bytes: n.Draw(t, "bytes"),
		CacheHit:  rapid.Bool().Draw(t, "cacheHit"),
		StartedAt: when("startedAt"), EndedAt: when("endedAt"),
	}
	switch rapid.IntRange(0, 2).Draw(t, "trace") {
	case 1:
		r.RoutingTrace = []string{}
	case 2:
		r.RoutingTrace = rapid.SliceOfN(text, 1, 3).Draw(t, "steps")
	}
	return r
}

// strictDecode is how DecodeBatch decodes a body without the fast path: encoding/json.
func strictDecode(data []byte) (*QueryRecordBatchV1, error) {
	b := &QueryRecordBatchV1{}
	return b, decodeStrict(data, b, "")
}

// sameAsStrict fails t when the fast path accepted data and encoding/json did not, or read it
// otherwise.
func sameAsStrict(t interface{ Fatalf(string, ...any) }, data []byte) (fastOK bool) {
	fast, ok := decodeBatchFast(data)
	if !ok {
		return false
	}
	strict, err := strictDecode(data)
	if err != nil {
		t.Fatalf("the fast path accepted what encoding/json refuses (%v):\n%q", err, data)
	}
	if !reflect.DeepEqual(fast, strict) {
		t.Fatalf("the fast path read\n%#v\nencoding/json read\n%#v\nfrom %q", fast, strict, data)
	}
	return true
}

// Every batch EncodeBatch writes takes the fast path, which reads it as encoding/json does.
func TestDecodeBatchFastReadsEncodedBatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := &QueryRecordBatchV1{BatchID: genText().Draw(t, "batchId"), Worker: genText().Draw(t, "worker"),
			Records: rapid.SliceOfN(rapid.Custom(genRecord), 0, 4).Draw(t, "records")}
		if b.Records == nil {
			b.Records = []Record{}
		}
		data := EncodeBatch(b)
		if !sameAsStrict(t, data) {
			t.Fatalf("the fast path did not take an encoded batch: %q", data)
		}
	})
}

// Whatever an edited body holds, the fast path either leaves it to encoding/json or reads it
// exactly as encoding/json does: it never accepts what encoding/json refuses.
func TestDecodeBatchFastNeverDecidesOtherwise(t *testing.T) {
	edits := []string{"", " ", "\"", "\\", ",", ":", "{", "}", "[", "]", "null", "0", "-", "01", "1.5", "1e3",
		"true", "false", `"queryId"`, `"QueryId"`, `"x"`, `"\u0041"`, "\xff", "\x01", `"2026-01-01T00:00:00Z"`}
	rapid.Check(t, func(t *rapid.T) {
		b := &QueryRecordBatchV1{BatchID: "b", Worker: "w", Records: rapid.SliceOfN(rapid.Custom(genRecord), 1, 2).Draw(t, "records")}
		data := EncodeBatch(b)
		for range rapid.IntRange(1, 3).Draw(t, "edits") {
			at := rapid.IntRange(0, len(data)).Draw(t, "at")
			cut := rapid.IntRange(0, min(8, len(data)-at)).Draw(t, "cut")
			ins := rapid.SampledFrom(edits).Draw(t, "insert")
			data = append(append(append([]byte{}, data[:at]...), ins...), data[at+cut:]...)
		}
		sameAsStrict(t, data)
	})
}

// The shortcuts: a key in another case, a key twice, null, an unknown field and trailing data
// go to encoding/json (which accepts the first two).
func TestDecodeBatchFastLeavesOddBodies(t *testing.T) {
	rec := `"status":"failed","startedAt":"2026-01-01T00:00:00Z","endedAt":"2026-01-01T00:00:01Z"`
	for _, body := range []string{
		`{"batchId":"b","records":[{"QueryID":"q",` + rec + `}]}`,
		`{"batchId":"b","records":[{"queryId":"q","queryId":"r",` + rec + `}]}`,
		`{"batchId":"b","records":[{"queryId":"q","routingTrace":null,` + rec + `}]}`,
		`{"batchId":"b","records":[{"queryId":"q","odd":1,` + rec + `}]}`,
		`{"batchId":"b","records":[{"queryId":"q",` + rec + `}]} x`,
		`{"batchId":"b","records":[{"queryId":"q","rows":1.0,` + rec + `}]}`,
	} {
		if _, ok := decodeBatchFast([]byte(body)); ok {
			t.Errorf("the fast path took %s", body)
		}
	}
	if _, ok := decodeBatchFast([]byte(`{"batchId":"b","records":[{"queryId":"q",` + rec + `}]}`)); !ok {
		t.Error("the fast path refused a plain batch")
	}
}

// BenchmarkDecodeBatch: a batch of 500 records as a worker relaying pgbench -S sends it, read
// by the fast path and by encoding/json alone.
func BenchmarkDecodeBatch(b *testing.B) {
	now := time.Now()
	batch := &QueryRecordBatchV1{BatchID: "0123456789abcdef", Worker: "w1"}
	for i := range 500 {
		batch.Records = append(batch.Records, Record{QueryID: hex16(uint64(i) * 0x9e3779b97f4a7c15), User: "postgres",
			Protocol: "postgres", Group: "pg", Cluster: "pg", SQL: "select abalance from pgbench_accounts where aid = ?;",
			SQLDigest: "3637a13460a31df3", Status: StatusSucceeded, Rows: 1, Bytes: 20, StartedAt: now, EndedAt: now.Add(40 * time.Microsecond)})
	}
	data := EncodeBatch(batch)
	for _, c := range []struct {
		name   string
		decode func([]byte) (*QueryRecordBatchV1, error)
	}{{"fast", DecodeBatch}, {"encoding-json", strictDecode}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := c.decode(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Records)), "ns/record")
		})
	}
}

func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := range b {
		b[15-i] = digits[v>>(4*i)&0xf]
	}
	return string(b[:])
}

// EncodeBatch writes exactly what json.Marshal writes.
func TestEncodeBatchIsJSONMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := &QueryRecordBatchV1{BatchID: genText().Draw(t, "batchId"), Worker: genText().Draw(t, "worker"),
			Records: rapid.SliceOfN(rapid.Custom(genRecord), -1, 4).Draw(t, "records")}
		want, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeBatch(b); !bytes.Equal(got, want) {
			t.Fatalf("EncodeBatch wrote\n%s\njson.Marshal writes\n%s", got, want)
		}
	})
}
