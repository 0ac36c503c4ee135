package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/canontest"
	"github.com/queryflux/queryflux/node/workerapi"
	"pgregory.net/rapid"
)

// anyText draws plain ASCII (the codec's own) and text encoding/json escapes (left to it).
func anyText(t *rapid.T, label string) string {
	return canontest.Text(t, label, "c1", "w-1/s-2", "c1:17:3")
}

func anyInt(t *rapid.T, label string) int64 {
	return rapid.OneOf(rapid.SampledFrom([]int64{0, 1, -1, 10_000, -1 << 63, 1<<63 - 1}), rapid.Int64()).Draw(t, label)
}

func anyAcquireRequest(t *rapid.T) AcquireRequest {
	req := AcquireRequest{Cluster: anyText(t, "cluster"), Cap: int(anyInt(t, "cap")), TTLMillis: anyInt(t, "ttl"),
		Holder: anyText(t, "holder"), WaitMillis: anyInt(t, "wait")}
	for i := range rapid.IntRange(0, 3).Draw(t, "releases") {
		req.Release = append(req.Release, LeaseRef{ID: anyText(t, fmt.Sprint("id", i)), Generation: anyInt(t, fmt.Sprint("gen", i))})
	}
	if rapid.Bool().Draw(t, "emptyRelease") && req.Release == nil {
		req.Release = []LeaseRef{} // omitted, as nil is
	}
	return req
}

func anyAcquireResponse(t *rapid.T) AcquireResponse {
	resp := AcquireResponse{Granted: rapid.Bool().Draw(t, "granted")}
	if rapid.Bool().Draw(t, "hasLease") {
		resp.Lease = &Lease{ID: anyText(t, "id"), Cluster: anyText(t, "leaseCluster"), Holder: anyText(t, "holder"),
			Generation: anyInt(t, "gen"), ExpiresAt: canontest.Time(t, "expires"), TTLMillis: anyInt(t, "ttl"), Revoked: rapid.Bool().Draw(t, "revoked"),
			Fleet: rapid.SampledFrom([]string{"", "0123456789abcdef"}).Draw(t, "fleet")}
	}
	if rapid.Bool().Draw(t, "saysContended") {
		c := rapid.Bool().Draw(t, "contended")
		resp.Contended = &c
	}
	return resp
}

// edit makes small edits to a body (whitespace, a changed or dropped byte, a key's case, other
// numbers, nulls, escapes, a duplicate key) so the decoders meet bodies they must leave to
// encoding/json as well as the ones they read.
func edit(t *rapid.T, body []byte) []byte {
	b := bytes.Clone(body)
	for range rapid.IntRange(0, 2).Draw(t, "edits") {
		if len(b) == 0 {
			break
		}
		i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
		switch rapid.IntRange(0, 6).Draw(t, "edit") {
		case 0:
			b = append(b[:i], append([]byte(" "), b[i:]...)...)
		case 1:
			b[i] = rapid.SampledFrom([]byte(`{}[],:"\ 0123456789.eE-+tfnaxC`)).Draw(t, "byte")
		case 2:
			b = append(b[:i], b[i+1:]...)
		case 3:
			key := rapid.SampledFrom([]string{`"cluster"`, `"id"`, `"granted"`, `"generation"`}).Draw(t, "key")
			as := rapid.SampledFrom([]string{`"Cluster"`, `"ID"`, `"granted2"`, `"gen\u0065ration"`}).Draw(t, "as")
			b = bytes.Replace(b, []byte(key), []byte(as), 1)
		case 4:
			num := rapid.SampledFrom([]string{`:1.5`, `:1e3`, `:-0`, `:null`, `:"0"`, `:00`}).Draw(t, "number")
			b = bytes.Replace(b, []byte(`:0`), []byte(num), 1)
		case 5:
			b = bytes.Replace(b, []byte(`{"`), []byte(`{"cluster":"x","`), 1)
		default:
			b = append(b, rapid.SampledFrom([]string{"\n", " ", "{}", "\n\n"}).Draw(t, "tail")...)
		}
	}
	return b
}

// TestAcquireCodecIsEncodingJSON: the acquire's encoders write json.Marshal's bytes; plain
// requests and answers are read by the canonical readers; and whatever the body (edited ones
// too), the decoders answer what encoding/json answers: json.Unmarshal's value, or the strict
// decoder's value and error for the control plane's strict read.
func TestAcquireCodecIsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := anyAcquireRequest(t)
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := req.AppendJSON([]byte("x")); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
		if _, ok := readAcquireRequest(want); !ok && plainRequest(req) {
			t.Fatalf("the canonical reader refused a plain request:\n%s", want)
		}
		body := edit(t, want)
		lenient, err := DecodeAcquireRequest(body, false)
		var oracle AcquireRequest
		oerr := json.Unmarshal(body, &oracle)
		if (err == nil) != (oerr == nil) || (err == nil && !reflect.DeepEqual(lenient, oracle)) {
			t.Fatalf("DecodeAcquireRequest(%s) = %+v, %v; json.Unmarshal: %+v, %v", body, lenient, err, oracle, oerr)
		}
		strict, err := DecodeAcquireRequest(body, true)
		var sOracle AcquireRequest
		serr := workerapi.DecodeStrict(body, &sOracle)
		if fmt.Sprint(err) != fmt.Sprint(serr) || (err == nil && !reflect.DeepEqual(strict, sOracle)) {
			t.Fatalf("strict DecodeAcquireRequest(%s) = %+v, %v; workerapi.DecodeStrict: %+v, %v", body, strict, err, sOracle, serr)
		}

		resp := anyAcquireResponse(t)
		want, werr := json.Marshal(resp)
		if werr != nil {
			if !panics(func() { resp.AppendJSON(nil) }) {
				t.Fatalf("AppendJSON encoded what json.Marshal refuses (%v)", werr)
			}
			return
		}
		if got := resp.AppendJSON([]byte("x")); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
		if _, ok := readAcquireResponse(append(want, '\n')); !ok && plainResponse(resp) {
			t.Fatalf("the canonical reader refused a plain answer:\n%s", want)
		}
		body = edit(t, append(want, '\n'))
		got, err := DecodeAcquireResponse(body)
		var rOracle AcquireResponse
		oerr = json.Unmarshal(body, &rOracle)
		if (err == nil) != (oerr == nil) || (err == nil && !sameResponse(got, rOracle)) {
			t.Fatalf("DecodeAcquireResponse(%s) = %+v, %v; json.Unmarshal: %+v, %v", body, got, err, rOracle, oerr)
		}
	})
}

// plainRequest: every string of req is text the codec writes itself.
func plainRequest(req AcquireRequest) bool {
	ok := workerapi.Plain(req.Cluster) && workerapi.Plain(req.Holder)
	for _, r := range req.Release {
		ok = ok && workerapi.Plain(r.ID)
	}
	return ok
}

func plainResponse(resp AcquireResponse) bool {
	l := resp.Lease
	return l == nil || (workerapi.Plain(l.ID) && workerapi.Plain(l.Cluster) && workerapi.Plain(l.Holder) && l.ExpiresAt.Year() >= 0 && l.ExpiresAt.Year() <= 9999)
}

// sameResponse compares two decoded answers, their expiry times as instants in the same zone
// offset (the decoders make equal zones, not the same *time.Location).
func sameResponse(a, b AcquireResponse) bool {
	if a.Granted != b.Granted || (a.Contended == nil) != (b.Contended == nil) || (a.Contended != nil && *a.Contended != *b.Contended) ||
		(a.Lease == nil) != (b.Lease == nil) {
		return false
	}
	if a.Lease == nil {
		return true
	}
	la, lb := *a.Lease, *b.Lease
	_, oa := la.ExpiresAt.Zone()
	_, ob := lb.ExpiresAt.Zone()
	if !la.ExpiresAt.Equal(lb.ExpiresAt) || oa != ob || la.ExpiresAt.Location().String() != lb.ExpiresAt.Location().String() {
		return false
	}
	la.ExpiresAt, lb.ExpiresAt = time.Time{}, time.Time{}
	return la == lb
}

func panics(fn func()) (did bool) {
	defer func() { did = recover() != nil }()
	fn()
	return false
}
