package pgwire

import (
	"reflect"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestWireStateReopenIsTheLiteral: reopen, which writes a reused wireState field by field,
// leaves it as the composite literal it stands for would, whatever the state held before; and
// the field list is the one reopen knows (a new field must be written there too).
func TestWireStateReopenIsTheLiteral(t *testing.T) {
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[wireState]()) {
		names = append(names, f.Name)
	}
	known := []string{"w", "relayer", "conn", "queue", "front", "req", "unnamed", "portals", "copyBytes",
		"broken", "firstRun", "firstUsed", "cancel", "cancelOf"}
	if !reflect.DeepEqual(names, known) {
		t.Fatalf("wireState's fields are %v; reopen writes %v: write the new ones there and here", names, known)
	}
	type wire struct {
		engine.PGWire
		n int
	}
	type relayer struct {
		sessionRelayer
		n int
	}
	old, oldCancel := &wire{n: 1}, func() {}
	used := func() *wireState { // every field held, none as a new wire's
		return &wireState{w: &proxy.Wire{Cluster: "old"}, relayer: &relayer{n: 1}, conn: old,
			queue: []expect{{kind: 'Q'}}, front: make([]expect, 0, 4), req: &query.Request{SQL: "old"},
			unnamed: "s1", portals: map[string]string{"p": "x"}, copyBytes: 7, broken: true,
			firstRun: wireRun{rows: 3, bytes: 9, limitSent: true, closed: true}, firstUsed: true,
			cancel: oldCancel, cancelOf: old}
	}
	w, rel, conn, req, cancel := &proxy.Wire{Cluster: "new"}, &relayer{n: 2}, &wire{n: 2}, &query.Request{SQL: "new"}, func() {}
	for _, withCancel := range []bool{false, true} {
		c := func() {}
		c = nil
		if withCancel {
			c = cancel
		}
		got := used()
		want := &wireState{w: w, relayer: rel, conn: conn, req: req, front: got.front, portals: got.portals, cancel: c, cancelOf: conn}
		got.reopen(w, rel, conn, req, c)
		if (got.cancel == nil) != (want.cancel == nil) ||
			got.cancel != nil && reflect.ValueOf(got.cancel).Pointer() != reflect.ValueOf(want.cancel).Pointer() {
			t.Errorf("cancel %v, want %v", got.cancel != nil, want.cancel != nil)
		}
		got.cancel, want.cancel = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reopen made\n%+v\nthe literal\n%+v", *got, *want)
		}
	}
}
