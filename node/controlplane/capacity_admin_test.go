package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/workerapi"
)

// errStoreDSN is a store's error quoting the DSN it dialed, password and all, in both forms a
// driver may print one.
var errStoreDSN = errors.New(`capacity store: dial postgres://qf:s3cretpw@db.internal:5432/qf (host=db.internal user=qf password=kvs3cret): connection refused`)

// listRevokeDown is a store whose listing and revoking fail with errStoreDSN.
type listRevokeDown struct{ *capacity.Memory }

func (listRevokeDown) List(context.Context, string) ([]capacity.Lease, error) {
	return nil, errStoreDSN
}

func (listRevokeDown) Revoke(context.Context, capacity.Selection, time.Time) ([]capacity.Lease, error) {
	return nil, errStoreDSN
}

// TestCapacityStoreFailuresLogNoPassword: when the capacity store fails an admin's lease
// listing or revocation, or the revocation of the leases of a worker session that ended, the
// failure is logged with where the store is (for the operator) but without its password, and
// the admin is answered 503 without the store's error.
func TestCapacityStoreFailuresLogNoPassword(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := listRevokeDown{capacity.NewMemory()}
	MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	a := h.register("a")
	if code, body := h.do("POST", capacity.PathAcquire, a, capacity.MediaJSON, `{"cluster":"c1","cap":2,"ttlMillis":30000}`); code != 200 {
		t.Fatalf("acquire: %d %s", code, body)
	}
	for _, c := range []struct {
		what, logs string
		call       func() (int, []byte)
	}{
		{"an admin's listing", "listing capacity leases failed", func() (int, []byte) {
			return h.do("GET", PathAdminLeases+"?cluster=c1", adminToken, "", "")
		}},
		{"an admin's revocation", "revoking a capacity lease failed", func() (int, []byte) {
			return h.do("POST", PathAdminLeaseRevoke, adminToken, capacity.MediaJSON, `{"lease":"c1#1"}`)
		}},
		{"a session superseded", "revoking the capacity leases of a worker session that ended failed", func() (int, []byte) {
			h.register("a")
			return 503, nil
		}},
	} {
		before := len(h.e.logs.String())
		code, body := c.call()
		logs := h.e.logs.String()[before:]
		if code != 503 || strings.Contains(string(body), "db.internal") {
			t.Errorf("%s: %d %s, want 503 without the store's error", c.what, code, body)
		}
		if !strings.Contains(logs, c.logs) || !strings.Contains(logs, "db.internal") {
			t.Errorf("%s: the store's failure not logged as %q: %s", c.what, c.logs, logs)
		}
		if strings.Contains(logs, "s3cretpw") || strings.Contains(logs, "kvs3cret") {
			t.Errorf("%s: the log holds the store's password: %s", c.what, logs)
		}
	}
}

// TestAdminRevokeRefusesBadInputOnce: an admin's revoke that is not JSON, has an unknown field,
// names a malformed lease or is of another media type is answered with one error naming what
// was wrong, and revokes nothing; one of a lease never granted is 404. A good one is answered
// the lease revoked.
func TestAdminRevokeRefusesBadInputOnce(t *testing.T) {
	h, store, _, _ := authority(t, 30*time.Second, &recordingFence{})
	w := h.register("w")
	if code, _, raw := h.acquireLease(w, `{"cluster":"c1"}`); code != 200 {
		t.Fatalf("acquire: %d %s", code, raw)
	}
	for _, c := range []struct {
		what, media, body string
		status            int
		names             string
	}{
		{"a body that is not JSON", capacity.MediaJSON, `{"lease":`, 400, "JSON"},
		{"an unknown field", capacity.MediaJSON, `{"lease":"c1#1","force":true}`, 400, "force"},
		{"a malformed lease", capacity.MediaJSON, `{"lease":"c1"}`, 400, `"c1"`},
		{"another media type", "text/plain", `{"lease":"c1#1"}`, 415, capacity.MediaJSON},
		{"a lease never granted", capacity.MediaJSON, `{"lease":"c1#99"}`, 404, `"c1#99"`},
	} {
		code, raw := h.do("POST", PathAdminLeaseRevoke, adminToken, c.media, c.body)
		dec := json.NewDecoder(bytes.NewReader(raw))
		var e workerapi.ErrorBody
		if code != c.status || dec.Decode(&e) != nil || !strings.Contains(e.Error, c.names) {
			t.Errorf("%s: %d %s, want %d naming %s", c.what, code, raw, c.status, c.names)
		} else if dec.More() {
			t.Errorf("%s: answered more than one error: %s", c.what, raw)
		}
		if ls, _ := store.List(context.Background(), "c1"); len(ls) != 1 || ls[0].Revoked {
			t.Fatalf("%s: the lease after the refusal: %+v, want held", c.what, ls)
		}
	}
	code, raw := h.do("POST", PathAdminLeaseRevoke, adminToken, capacity.MediaJSON, `{"lease":"c1#1"}`)
	var resp RevokeResponse
	if code != 200 || json.Unmarshal(raw, &resp) != nil || resp.Lease.ID != "c1#1" || !resp.Lease.Revoked || capacity.HolderWorker(resp.Lease.Holder) != "w" {
		t.Fatalf("the revoke of w's lease: %d %s, want 200 naming the lease, revoked, and its holder", code, raw)
	}
}
