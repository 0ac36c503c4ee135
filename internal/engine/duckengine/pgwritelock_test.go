package duckengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestWriteIntent: which statements take the write lock, as PostgreSQL makes them wait: a
// plain INSERT never (but one ON CONFLICT), a write, DDL, COPY FROM, a strong LOCK and a
// locking SELECT always; a Trino or Flight SQL client's writes as a PostgreSQL client's; a
// MySQL client's not here.
func TestWriteIntent(t *testing.T) {
	type intent struct {
		write, nowait bool
		what          string
	}
	for _, c := range []struct {
		protocol, sql string
		want          intent
	}{
		{query.ProtocolPostgres, "insert into t values (1)", intent{}},
		{query.ProtocolPostgres, "INSERT INTO t SELECT * FROM u", intent{}},
		{query.ProtocolPostgres, "insert into t (note) values ('on conflict')", intent{}},
		{query.ProtocolPostgres, "insert into t values (1) on conflict (id) do nothing", intent{write: true}},
		{query.ProtocolPostgres, "insert into t select * from (select 1 on conflict) x", intent{}},
		{query.ProtocolPostgres, "  /* c */ Update t set n = 1", intent{write: true}},
		{query.ProtocolPostgres, "delete from t", intent{write: true}},
		{query.ProtocolPostgres, "create table t (id int)", intent{write: true}},
		{query.ProtocolPostgres, "copy t from stdin", intent{write: true}},
		{query.ProtocolPostgres, "copy (select 1 from t) to stdout", intent{}},
		{query.ProtocolPostgres, "lock table t in access share mode", intent{}},
		{query.ProtocolPostgres, "lock table t in row share mode", intent{}},
		{query.ProtocolPostgres, "lock table t in exclusive mode", intent{write: true}},
		{query.ProtocolPostgres, "explain analyze update t set n = 1", intent{write: true}},
		{query.ProtocolPostgres, "explain update t set n = 1", intent{}},
		{query.ProtocolPostgres, "with d as (delete from t returning *) select * from d", intent{write: true}},
		{query.ProtocolPostgres, "with d as (select 1) select * from d", intent{}},
		{query.ProtocolPostgres, "select 1", intent{}},
		{query.ProtocolPostgres, "select 'for update'", intent{}},
		{query.ProtocolPostgres, "select n from Acct where id = 1 for update", intent{write: true, what: `"acct"`}},
		{query.ProtocolPostgres, `select n from "Acct" for share nowait`, intent{write: true, nowait: true, what: `"Acct"`}},
		{query.ProtocolPostgres, "select n from acct for update skip locked", intent{}},
		{query.ProtocolPostgres, "", intent{}},
		{query.ProtocolTrino, "update t set n = 1", intent{write: true}},
		{query.ProtocolTrino, "insert into t values (1)", intent{}},
		{query.ProtocolFlightSQL, "DELETE FROM t WHERE id = 1", intent{write: true}},
		{query.ProtocolFlightSQL, "select * from t", intent{}},
		{query.ProtocolMySQL, "update t set n = 1", intent{}},
	} {
		q := &query.Request{SQL: c.sql, Protocol: c.protocol}
		var got intent
		got.write, got.nowait, got.what = writeIntent(q)
		if got != c.want {
			t.Errorf("%s %q: %+v; want %+v", c.protocol, c.sql, got, c.want)
		}
	}
}
