package duckengine_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestJDBCMetadata: PostgreSQL's JDBC driver reads the embedded DuckDB's catalog through the
// proxy as tools do on connect: primary keys (in key order), tables, columns, indexes, foreign
// keys (each answer as PostgreSQL 15's for the same tables, Meta.java run against it).
func TestJDBCMetadata(t *testing.T) {
	src, err := filepath.Abs("testdata/jdbc/Meta.java")
	if err != nil {
		t.Fatal(err)
	}
	classpath := pgclienttest.JDBCClasspath(t, src)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:", Database: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	d := pgclienttest.Proxy(t, eng, proxy.PoolModeTransaction, "demo")
	out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "Meta", d.JDBC(), "t_meta")
	if err != nil {
		t.Fatalf("java Meta: %v\n%s", err, out)
	}
	pgclienttest.Expect(t, "JDBC metadata on DuckDB", out, map[string]string{
		"primary_keys":        "t_meta,b,1;t_meta,a,2",
		"primary_keys_schema": "b,1;a,2",
		"no_primary_key":      "[]",
		"tables":              "t_meta;t_meta_fk;t_meta_ix;t_meta_nopk",
		// What PostgreSQL 15 answers for the same tables (the primary key's index is
		// <table>_pkey there).
		"index_info":        "t_meta_ix_code_key,code,1,f;t_meta_ix_pkey,id,1,f;t_meta_ix_nm,n,1,t;t_meta_ix_nm,m,2,t",
		"index_info_unique": "t_meta_ix_code_key,code;t_meta_ix_pkey,id",
		"pk_name":           "id,t_meta_ix_pkey",
		// Foreign keys: PostgreSQL's names, NO ACTION (3) on update and delete, not
		// deferrable (7), the referenced key's index as PK_NAME.
		"imported_keys": "t_meta_ix,code,t_meta_fk,ix_code,1,3,3,t_meta_fk_ix_code_fkey,t_meta_ix_code_key,7;" +
			"t_meta_ix,id,t_meta_fk,ix_id,1,3,3,t_meta_fk_ix_id_fkey,t_meta_ix_pkey,7",
		"exported_keys": "t_meta_ix,code,t_meta_fk,ix_code,t_meta_fk_ix_code_fkey,t_meta_ix_code_key;" +
			"t_meta_ix,id,t_meta_fk,ix_id,t_meta_fk_ix_id_fkey,t_meta_ix_pkey",
		"cross_reference": "code,ix_code;id,ix_id",
		"columns":         "a,int4;b,varchar;c,float8", // b declared varchar (pgdeclared.go)
		"keywords":        "true",
		"after":           "7",
	})
}
