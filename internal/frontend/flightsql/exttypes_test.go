package flightsql

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// PostgreSQL's uuid reaches arrow-go's Flight SQL client as Arrow's uuid extension type and
// json/jsonb as Arrow's json extension type, in the FlightInfo schema and in the stream.
func TestUUIDAndJSONExtensionTypesFromPostgres(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: u.Host,
		Database: strings.TrimPrefix(u.Path, "/"), User: u.User.Username(), Options: map[string]string{"sslmode": "disable"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	c := startServer(t, frontendtest.NewBackend(eng), Options{})
	ctx := context.Background()
	info, err := c.Execute(ctx, `select 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid as id, '{"a": 1}'::jsonb as doc, 'x' as s`)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := flight.DeserializeSchema(info.Schema, c.Alloc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("no batch: %v", r.Err())
	}
	b := r.RecordBatch()
	for _, s := range []string{schema.String(), b.Schema().String()} {
		if !strings.Contains(s, "id: type=extension<arrow.uuid>") || !strings.Contains(s, "doc: type=extension<arrow.json") || !strings.Contains(s, "s: type=utf8") {
			t.Fatalf("schema %s", s)
		}
	}
	id, ok := b.Column(0).(*extensions.UUIDArray)
	if !ok || id.ValueStr(0) != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
		t.Fatalf("uuid column %T %v", b.Column(0), b.Column(0))
	}
	doc, ok := b.Column(1).(*extensions.JSONArray)
	if !ok || doc.ValueStr(0) != `{"a": 1}` {
		t.Fatalf("json column %T %v", b.Column(1), b.Column(1))
	}
}
