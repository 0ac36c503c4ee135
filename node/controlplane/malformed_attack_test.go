package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/workerapi"
)

// workerEndpoint is a control-plane endpoint a worker posts to, with a body it takes and the
// name of one of its fields (and the JSON value that field has in it) to break.
type workerEndpoint struct {
	path, media, valid, field, value string
	bound                            int // the largest body it reads
}

// malformedBodies are the bodies every endpoint gets, each with a word its refusal must carry
// (the field, where one is to blame). valid is the endpoint's body; field and value one of its
// fields as written there.
func malformedBodies(ep workerEndpoint) []struct{ what, body, says string } {
	with := func(v string) string {
		return strings.Replace(ep.valid, fmt.Sprintf("%q:%s", ep.field, ep.value), fmt.Sprintf("%q:%s", ep.field, v), 1)
	}
	return []struct{ what, body, says string }{
		{"an empty body", "", "object"},
		{"null", "null", "object"},
		{"an array", "[" + ep.valid + "]", "object"},
		{"a string", `"x"`, "object"},
		{"half an object", ep.valid[:len(ep.valid)/2], ""},
		{"two objects", ep.valid + ep.valid, "trailing"},
		{"an unknown field", strings.Replace(ep.valid, "{", `{"bogus":1,`, 1), "bogus"},
		{"a field in another case", strings.Replace(ep.valid, fmt.Sprintf("%q:", ep.field), fmt.Sprintf("%q:", strings.ToUpper(ep.field[:1])+ep.field[1:]), 1), ""},
		{"a duplicated field", strings.Replace(ep.valid, "{", fmt.Sprintf(`{%q:%s,`, ep.field, ep.value), 1), ep.field},
		{"a field of the wrong type", with(`{"x":[true]}`), ep.field},
		{"a huge number", with(`1e400`), ep.field},
		{"a negative huge number", with(`-99999999999999999999999`), ep.field},
		{"a fraction", with(`0.5`), ep.field},
		{"invalid UTF-8", with("\"\xff\xfe\""), ""},
		{"deep nesting", with(strings.Repeat("[", 20000) + strings.Repeat("]", 20000)), ""},
		{"a body past the bound", strings.Replace(ep.valid, "{", `{"pad":"`+strings.Repeat("x", ep.bound)+`",`, 1), "larger"},
	}
}

// TestMalformedBodiesToEveryWorkerEndpoint: a worker holding the worker secret sends every
// control-plane endpoint it can reach (register, heartbeat, lease acquire, renew, renew-batch,
// release-batch, history upload) bodies that are not what it takes: empty, null, arrays, half an
// object, two objects, unknown, miscased and duplicated fields, wrong types, numbers past their
// type, fractions, invalid UTF-8, nesting 20,000 deep, bodies past the bound. Each is refused
// with a 4xx naming what was wrong (the field, where one is to blame), never a 5xx; and what
// was accepted before stays: the worker's and another worker's leases are held, renewable, and
// no more than the cap; the history stored stays; both workers stay registered.
func TestMalformedBodiesToEveryWorkerEndpoint(t *testing.T) {
	h, store, _ := hostileFleet(t)
	hist := history.NewMemory(100)
	h.cp.MountHistory(hist)
	us := h.register("w-us", "us-1")
	eu := h.register("w-eu", "eu-1")
	acquire := func(token, cluster string) capacity.LeaseRef {
		code, body := h.send(capacity.PathAcquire, token, capacity.MediaJSON, `{"cluster":"`+cluster+`","cap":1,"ttlMillis":30000}`)
		var got capacity.AcquireResponse
		if code != 200 || json.Unmarshal([]byte(body), &got) != nil || !got.Granted {
			t.Fatalf("acquire %s: %d %s", cluster, code, body)
		}
		return capacity.LeaseRef{ID: got.Lease.ID, Generation: got.Lease.Generation}
	}
	usLease, euLease := acquire(us, "c-all"), acquire(eu, "c-eu")
	ref := func(l capacity.LeaseRef) string { return fmt.Sprintf(`{"id":%q,"generation":%d}`, l.ID, l.Generation) }
	if ack := h.postHistory(eu, histRecord("q-kept", "alice", "eu", "c-eu")); ack.Inserted != 1 {
		t.Fatalf("the eu worker's first record: %+v", ack)
	}

	endpoints := []workerEndpoint{
		{workerapi.PathRegister, workerapi.MediaWorkerRegister, `{"name":"w-eu3","version":"1","labels":{"zone":"eu-1"},"frontends":[]}`, "version", `"1"`, workerapi.BodyBytesMax},
		{workerapi.PathHeartbeat, workerapi.MediaHeartbeat, `{"seq":7,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`, "seq", "7", workerapi.BodyBytesMax},
		{capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"c-eu","cap":1,"ttlMillis":30000}`, "ttlMillis", "30000", workerapi.BodyBytesMax},
		{capacity.PathRenew, capacity.MediaJSON, `{"lease":` + ref(euLease) + `,"ttlMillis":30000}`, "ttlMillis", "30000", workerapi.BodyBytesMax},
		{capacity.PathRenewBatch, capacity.MediaJSON, `{"leases":[` + ref(euLease) + `],"ttlMillis":30000}`, "ttlMillis", "30000", workerapi.BodyBytesMax},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + ref(euLease) + `]}`, "leases", "[" + ref(euLease) + "]", workerapi.BodyBytesMax},
		{history.PathWorkerHistory, history.MediaQueryRecords, `{"batchId":"b-bad","records":[` + histRecord("q-bad", "alice", "eu", "c-eu") + `]}`, "batchId", `"b-bad"`, history.BatchBytesMax},
	}
	for _, ep := range endpoints {
		token := eu
		if ep.path == workerapi.PathRegister {
			token = csSecret
		}
		for _, m := range malformedBodies(ep) {
			code, body := h.get(ep.path, token, http.Header{"Content-Type": {ep.media}}, "POST", m.body)
			var answer workerapi.ErrorBody
			if code < 400 || code >= 500 || json.Unmarshal([]byte(body), &answer) != nil || answer.Error == "" {
				t.Errorf("%s, %s: %d %.300s; want a 4xx saying what was wrong", ep.path, m.what, code, body)
				continue
			}
			if said := answer.Error + " " + answer.Field; m.says != "" && !strings.Contains(said, m.says) {
				t.Errorf("%s, %s: %d %.300s; want it to name %q", ep.path, m.what, code, body, m.says)
			}
		}
	}

	// The config long-poll's one number, out of its range or not a number.
	for _, v := range []string{"-1", "0", "abc", "1e3", "99999999999999999999", "3601", "1.5", "%00"} {
		code, body := h.get(snapshot.PathConfigWait+"?revision=x&timeoutSecs="+v, eu, nil, "", "")
		if code != http.StatusBadRequest || !strings.Contains(body, `"field":"timeoutSecs"`) {
			t.Errorf("config wait with timeoutSecs=%s: %d %.200s; want 400 naming timeoutSecs", v, code, body)
		}
	}

	// Nothing accepted before was lost, and nothing of the us worker changed.
	for name, c := range map[string]struct {
		token string
		lease capacity.LeaseRef
	}{"us": {us, usLease}, "eu": {eu, euLease}} { //determinism:ok a test's checks
		if code, body := h.send(capacity.PathRenew, c.token, capacity.MediaJSON, `{"lease":`+ref(c.lease)+`,"ttlMillis":30000}`); code != 200 {
			t.Errorf("the %s worker's lease after the malformed bodies: %d %s", name, code, body)
		}
		if code, body := h.send(workerapi.PathHeartbeat, c.token, workerapi.MediaHeartbeat,
			`{"seq":99,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`); code != 200 {
			t.Errorf("the %s worker's heartbeat after the malformed bodies: %d %s", name, code, body)
		}
	}
	for _, cluster := range []string{"c-eu", "c-us", "c-all"} {
		if ls, _ := store.List(context.Background(), cluster); len(ls) != map[string]int{"c-eu": 1, "c-all": 1}[cluster] {
			t.Errorf("cluster %s holds %d leases after the malformed bodies", cluster, len(ls))
		}
	}
	page, err := hist.Query(context.Background(), history.Filter{Limit: 10})
	if err != nil || len(page.Records) != 1 || page.Records[0].QueryID != "q-kept" {
		t.Errorf("the history after the malformed bodies: %+v %v; want q-kept only", page, err)
	}
	if code, body := h.get(snapshot.PathConfig, eu, nil, "", ""); code != 200 {
		t.Errorf("the eu worker's config after the malformed bodies: %d %.200s", code, body)
	}
}
