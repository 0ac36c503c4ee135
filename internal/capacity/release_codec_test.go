package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
	"pgregory.net/rapid"
)

// TestReleaseBatchCodecIsEncodingJSON: the release batch's encoders write json.Marshal's
// bytes; plain batches and answers are read by the canonical readers; and whatever the body
// (edited ones too), the decoders answer what encoding/json answers: the strict decoder's
// value or its error for a request, json.Unmarshal's for an answer.
func TestReleaseBatchCodecIsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var req ReleaseBatchRequest
		for i := range rapid.IntRange(0, 4).Draw(t, "leases") {
			req.Leases = append(req.Leases, LeaseRef{ID: anyText(t, fmt.Sprint("id", i)), Generation: anyInt(t, fmt.Sprint("gen", i))})
		}
		if req.Leases == nil && rapid.Bool().Draw(t, "empty") {
			req.Leases = []LeaseRef{}
		}
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := req.AppendJSON([]byte("x")); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
		plain := len(req.Leases) > 0
		for _, l := range req.Leases {
			plain = plain && workerapi.Plain(l.ID)
		}
		if _, ok := readReleaseBatchRequest(want); !ok && plain {
			t.Fatalf("the canonical reader refused a plain batch:\n%s", want)
		}
		body := edit(t, want)
		got, err := DecodeReleaseBatchRequest(body)
		var oracle ReleaseBatchRequest
		oerr := workerapi.DecodeStrict(body, &oracle)
		if fmt.Sprint(err) != fmt.Sprint(oerr) || (err == nil && !reflect.DeepEqual(got, oracle)) {
			t.Fatalf("DecodeReleaseBatchRequest(%s) = %+v, %v; workerapi.DecodeStrict: %+v, %v", body, got, err, oracle, oerr)
		}

		resp := ReleaseBatchResponse{Released: int(anyInt(t, "released"))}
		want, err = json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.AppendJSON([]byte("x")); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
		body = edit(t, append(want, '\n'))
		gotResp, err := DecodeReleaseBatchResponse(body)
		var rOracle ReleaseBatchResponse
		oerr = json.Unmarshal(body, &rOracle)
		if (err == nil) != (oerr == nil) || (err == nil && gotResp != rOracle) {
			t.Fatalf("DecodeReleaseBatchResponse(%s) = %+v, %v; json.Unmarshal: %+v, %v", body, gotResp, err, rOracle, oerr)
		}
	})
}

// The release endpoint answers as WriteJSON did: its media type, the count, a newline; and a
// body it cannot read is a 400 naming the problem, as DecodeRequest answered.
func TestReleaseBatchAnswerIsWriteJSONs(t *testing.T) {
	rec := httptest.NewRecorder()
	writeReleased(rec, ReleaseBatchResponse{Released: 3})
	want := httptest.NewRecorder()
	workerapi.WriteJSON(want, http.StatusOK, MediaJSON, ReleaseBatchResponse{Released: 3})
	if rec.Code != want.Code || rec.Body.String() != want.Body.String() || !reflect.DeepEqual(rec.Header(), want.Header()) {
		t.Fatalf("answer %d %v %q, WriteJSON's %d %v %q", rec.Code, rec.Header(), rec.Body, want.Code, want.Header(), want.Body)
	}
	for _, body := range []string{`{"leases":[{"id":"c1:1:1","generation":1}],"x":1}`, `{"leases":[{"id":"c1:1:1","generation":1.5}]}`, `{`} {
		req := httptest.NewRequest(http.MethodPost, PathReleaseBatch, strings.NewReader(body))
		req.Header.Set("Content-Type", MediaJSON)
		got, oracle := httptest.NewRecorder(), httptest.NewRecorder()
		NewAPI(nil, nil, env.Real(slog.New(slog.DiscardHandler)), nil).serveReleaseBatch(got, req, "w-1")
		oreq := httptest.NewRequest(http.MethodPost, PathReleaseBatch, strings.NewReader(body))
		oreq.Header.Set("Content-Type", MediaJSON)
		var v ReleaseBatchRequest
		DecodeRequest(oracle, oreq, &v)
		if got.Code != http.StatusBadRequest || got.Body.String() != oracle.Body.String() {
			t.Fatalf("%s: answered %d %q, DecodeRequest %d %q", body, got.Code, got.Body, oracle.Code, oracle.Body)
		}
	}
}
