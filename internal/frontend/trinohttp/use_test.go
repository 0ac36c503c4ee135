package trinohttp

import (
	"context"
	"fmt"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// USE [catalog.]schema is answered with X-Trino-Set-Catalog and X-Trino-Set-Schema, which both
// clients send back as their catalog and schema: on MariaDB, whose database the schema names,
// the next statement runs in it. USE schema without a catalog is MISSING_CATALOG_NAME.
func TestUseSetsTheClientsCatalogAndSchema(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	ts := startServer(t, backend, Options{})

	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	conn, err := db.Conn(context.Background()) // USE lasts for the client connection it ran on
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), "USE "+dbName)
	if trinoErrorName(err) != "MISSING_CATALOG_NAME" {
		t.Fatalf("USE schema without a catalog: %v", err)
	}
	if _, err := conn.ExecContext(context.Background(), `USE Maria."`+dbName+`"`); err != nil {
		t.Fatalf("USE catalog.schema: %v", err)
	}
	var current string
	if err := conn.QueryRowContext(context.Background(), "SELECT database()").Scan(&current); err != nil || current != dbName {
		t.Fatalf("after USE: database() %q, %v; want %q", current, err, dbName)
	}
	if req := backend.LastRequest(t); req.Database != "maria" || req.Schema != dbName {
		t.Fatalf("after USE the client sent catalog %q, schema %q", req.Database, req.Schema)
	}
	if _, err := conn.ExecContext(context.Background(), "use information_schema"); err != nil {
		t.Fatalf("USE schema with the catalog set: %v", err)
	}
	if err := conn.QueryRowContext(context.Background(), "SELECT database()").Scan(&current); err != nil || current != "information_schema" {
		t.Fatalf("after USE information_schema: %q, %v", current, err)
	}

	got := runNPM(t, ts.addr, "alice",
		npmStep{Name: "nocatalog", SQL: "USE " + dbName},
		npmStep{Name: "use", SQL: "USE maria." + dbName},
		npmStep{Name: "current", SQL: "SELECT database()"})
	if e := got["nocatalog"].Error; e == nil || e.ErrorName != "MISSING_CATALOG_NAME" {
		t.Fatalf("npm USE schema without a catalog: %+v", got["nocatalog"])
	}
	if o := got["current"].OK; got["use"].Error != nil || o == nil || fmt.Sprint(o.Rows) != "[["+dbName+"]]" {
		t.Fatalf("npm USE then database(): %+v %+v", got["use"], got["current"])
	}
}
