package policy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestStatementsCannotReachADatabaseThroughItsObjects: past the table positions, bob (limited
// to pub on the MariaDB group) could still drop, alter or describe database priv itself, copy a
// priv table's definition into pub, read the definitions of priv's routines, triggers and
// events, grant the engine user's privileges on priv, draw from priv's sequences and load its
// indexes (each passed the catalog rule before). Each names priv and is refused; the same
// statements on pub, and look-alikes (a LIKE pattern in a view, a one-part sequence, grants on
// the session's database), still pass.
func TestStatementsCannotReachADatabaseThroughItsObjects(t *testing.T) {
	c := mustCompile(t, catalogRulesConfig())
	for _, sql := range []string{
		"drop database priv", "drop schema if exists priv", "alter database priv character set utf8", "show create database priv",
		"create database if not exists priv2",
		"create table pub.c like priv.t", "create table c like `priv`.t", "create table c (like priv.t)",
		"show create procedure priv.p", "show create function priv.f", "show create trigger priv.tr", "show create event priv.e",
		"drop procedure priv.p", "drop function if exists priv.f", "drop trigger priv.tr", "alter event priv.e disable",
		"drop sequence priv.s", "create sequence priv.s", "drop table if exists priv.t", "drop view if exists priv.v",
		"grant select on priv.* to x", "grant select on priv.t to x", "revoke all on priv.* from x", "grant execute on procedure priv.p to x",
		"select next value for priv.s", "select previous value for priv.s", "select nextval(priv.s)", "select lastval(priv.s)", "select setval(priv.s, 1)",
		"load index into cache priv.t", "cache index priv.t in hot",
	} {
		if err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: sql}, "maria"); code(err) != query.CodeAccessDenied {
			t.Errorf("bob in pub: %q: %v, want access denied", sql, err)
		}
	}
	for _, sql := range []string{
		"alter database pub character set utf8", "show create database pub", "select database()", "select schema()",
		"create table c like t", "create table pub.c like pub.t", "drop table if exists t", "drop table if exists pub.t",
		"create view v as select * from t where a like t.b", "select * from t where t.a like t.b",
		"show create procedure pub.p", "drop procedure p", "grant select on t to x", "grant select on pub.* to x", "grant select on * to x",
		"select next value for s", "select nextval(s)", "select setval(pub.s, 1)", "select * from t for update",
		"cache index t in hot", "load index into cache pub.t",
	} {
		if err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: sql}, "maria"); err != nil {
			t.Errorf("bob in pub: %q: %v, want allowed", sql, err)
		}
	}
}
