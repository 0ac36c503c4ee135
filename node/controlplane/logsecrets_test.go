package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/registry"
)

// dsnErr is a store's error that quotes its DSN, password and all, as a driver's may.
var dsnErr = errors.New(`failed to connect to "postgres://qf:s3cretpw@db.internal:5432/qf" (host=db.internal password=kvs3cret): connection refused`)

// putFails is a registry whose writes fail with dsnErr.
type putFails struct{ *registry.Memory }

func (putFails) Put(context.Context, []registry.Record) error { return dsnErr }

// TestRegistryStoreFailureLogsNoPassword: the registry's write failing with an error that
// quotes its DSN is logged with the store's host, without the password.
func TestRegistryStoreFailureLogsNoPassword(t *testing.T) {
	e := newManualEnv()
	mem := registry.NewMemory()
	cp := New(e, testConfig, putFails{mem})
	if err := cp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: e, store: mem, cp: cp}
	h.register("a")
	_ = cp.Flush(context.Background())
	logs := e.logs.String()
	if !strings.Contains(logs, "writing the worker registry batch failed") || !strings.Contains(logs, "db.internal") {
		t.Fatalf("the registry's failure not logged: %s", logs)
	}
	if strings.Contains(logs, "s3cretpw") || strings.Contains(logs, "kvs3cret") {
		t.Fatalf("the log holds the store's password: %s", logs)
	}
}
