package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
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
