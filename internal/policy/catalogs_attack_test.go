package policy

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
)

// catalogRulesConfig: bob may query the MariaDB group "maria" in database pub only; alice
// anywhere but hr (a deny rule); the PostgreSQL group keeps its rule by the session's catalog.
func catalogRulesConfig() *config.Config {
	return cfgWith(func(cfg *config.Config) {
		cfg.Clusters = append(cfg.Clusters, config.Cluster{Name: "m", Engine: config.EngineMySQL})
		cfg.ClusterGroups = append(cfg.ClusterGroups, config.ClusterGroup{Name: "maria", Members: []string{"m"}})
		cfg.Settings.AccessControl.Rules = []config.AccessRule{
			{Users: []string{"bob"}, Groups: []string{"maria", "prod"}, Catalogs: []string{"pub"}},
			{Users: []string{"alice"}, Groups: []string{"maria"}, Catalogs: []string{"hr"}, Effect: config.EffectDeny},
			{Users: []string{"alice"}, Groups: []string{"maria"}},
		}
	})
}

// TestStatementsCannotNameADatabaseTheirRuleDoesNotList: on a MariaDB group a rule limited to
// catalog pub held only for the session's database; bob, in pub, read another database by
// naming it (`SELECT * FROM priv.t` through the mysql CLI returned priv's rows, queryflux serve,
// 2026-12-05). Every database a statement names must be one the rules allow: in FROM, JOIN
// and table lists, three-part names, routines, SHOW ... FROM, DDL, text PREPARE and EXECUTE
// IMMEDIATE run, executable comments, quoted and ANSI-quoted names; a deny rule in any case.
func TestStatementsCannotNameADatabaseTheirRuleDoesNotList(t *testing.T) {
	c := mustCompile(t, catalogRulesConfig())
	attacks := []struct{ user, sql string }{
		{"bob", "select * from priv.t"},
		{"bob", "SELECT * FROM `priv`.`t`"},
		{"bob", `select * from "priv"."t"`},
		{"bob", "select * from pub.t join priv.t u on true"},
		{"bob", "select * from pub.t a, priv.t b"},
		{"bob", "select * from (select 1) x, priv.t"},
		{"bob", "select priv.t.secret from pub.t"},
		{"bob", "select priv.f(1)"},
		{"bob", "call priv.p()"},
		{"bob", "insert into pub.t select * from priv.t"},
		{"bob", "insert priv.t values (1)"},
		{"bob", "update pub.t a, priv.t b set a.x = b.x"},
		{"bob", "insert into pub.t values (1) on duplicate key update a = (select max(x) from priv.t)"},
		{"bob", "delete from priv.t"},
		{"bob", "create view pub.v as select * from priv.t"},
		{"bob", "describe priv.t"},
		{"bob", "show tables from priv"},
		{"bob", "show full tables in priv"},
		{"bob", "show columns from t from priv"},
		{"bob", "show create table priv.t"},
		{"bob", "table priv.t"},
		{"bob", "select * from /*!50000 priv.t */"},
		{"bob", "select 1; select * from priv.t"},
		{"bob", "select 1; prepare s from 'select * from priv.t'"},
		{"bob", "do 1; execute immediate 'select * from priv.t'"},
		{"bob", "select 1; show tables from priv"},
		{"bob", "select * from pub.t;; show full tables in priv"},
		{"bob", "prepare s from 'select * from priv.t'"},
		{"bob", "execute immediate 'select * from priv.t where a = ?' using 1"},
		{"bob", prepared("select * from priv.t", 3)},
		{"bob", prepared("select * from pub.t", catalogTextDepthMax+1)},
		{"bob", "execute immediate 'select * from `priv`.t'"},
		{"bob", "begin not atomic select * from priv.t; end"},
		{"bob", "select * from information_schema.tables"},
		{"bob", "select * from mysql.user"},
		{"bob", "grant select on priv.* to x"},
		{"bob", "grant select on `priv`.t to x"},
		{"bob", "grant select on *.* to x"},
		{"bob", "revoke all on priv.* from x"},
		{"bob", "rename table pub.t to priv.t"},
		{"bob", "rename table pub.a to pub.b, pub.c to priv.d"},
		{"bob", "alter table pub.t rename to priv.t"},
		{"bob", "create table pub.t2 like priv.t"},
		{"bob", "create table if not exists pub.t2 (like priv.t)"},
		{"bob", "create definer=`x`@`%` trigger pub.tr before insert on priv.t for each row set @a=1"},
		{"bob", "drop database priv"},
		{"bob", "drop schema if exists priv"},
		{"bob", "create database if not exists priv"},
		{"bob", "alter database priv charset utf8mb4"},
		{"bob", "show create database priv"},
		{"bob", "show create procedure priv.p"},
		{"bob", "drop function priv.f"},
		{"bob", "show create event priv.e"},
		{"bob", "select * from pub.t partition (p0), priv.t"},
		{"bob", "select * from pub.t force index (i), priv.t"},
		{"bob", "select * from pub.t a ignore key (i), priv.t"},
		{"bob", "select * from pub.t use index (i), priv.t"},
		{"alice", "grant select on *.* to x"},
		{"alice", "select * from HR.salaries"},
		{"alice", "select * from `hr`.salaries"},
	}
	for _, a := range attacks {
		err := c.Check(&query.Request{User: a.user, Database: "pub", SQL: a.sql}, "maria")
		if code(err) != query.CodeAccessDenied {
			t.Errorf("%s in pub: %q: %v, want access denied", a.user, a.sql, err)
		}
	}
	allowed := []struct{ user, db, sql string }{
		{"bob", "pub", "select * from t"},
		{"bob", "pub", "select t.a, u.b from t join u on t.id = u.id"},
		{"bob", "pub", "select x.a from pub.t x, u where x.a = u.a"},
		{"bob", "pub", "select * from pub.t"},
		{"bob", "pub", "select pub.t.a from pub.t"},
		{"bob", "pub", "select count(*), max(t.a) from t group by t.b order by t.b"},
		{"bob", "pub", "select 'priv.t', \"not.a.name\" = 'a.b.c' from t where s like 'www.example.com'"},
		{"bob", "pub", "insert into t (a, b) values (1.5, 2)"},
		{"bob", "pub", "select * from t where t.a in (select u.a from u)"},
		{"bob", "pub", "show tables"},
		{"bob", "pub", "show columns from t"},
		{"bob", "pub", "show columns from events"},
		{"bob", "pub", "show index from `tables`"},
		{"bob", "pub", "select * from t;"},
		{"bob", "pub", "select 1;; select * from t ;"},
		{"bob", "pub", "select * from (select a from t) y where (y.a, y.b) in ((1, 2))"},
		{"bob", "pub", "select * from t where (t.a, t.b) in (select u.a, u.b from u) and (t.c, t.d) = (1, 2)"},
		{"bob", "pub", "insert into t (a, b) values (1, 2) on duplicate key update t.a = t.a + 1, t.b = values(b)"},
		{"bob", "pub", "insert into t select * from u on duplicate key update b = 1, t.b = u.b"},
		{"bob", "pub", prepared("select * from pub.t join u", catalogTextDepthMax)},
		{"bob", "pub", "grant select on t to x"},
		{"bob", "pub", "grant select on pub.* to x"},
		{"bob", "pub", "rename table t to t2, u to pub.u2"},
		{"bob", "pub", "alter table t rename to t2"},
		{"bob", "pub", "create table t2 like t"},
		{"bob", "pub", "create trigger tr before insert on t for each row set new.a = 1"},
		{"bob", "pub", "create view v as select * from t join u on t.a = u.a"},
		{"bob", "pub", "create database if not exists pub"},
		{"bob", "pub", "alter database charset utf8mb4"},
		{"bob", "pub", "alter schema default character set utf8mb4"},
		{"bob", "pub", "show create database pub"},
		{"bob", "pub", "drop procedure p"},
		{"bob", "pub", "show create procedure pub.p"},
		{"bob", "pub", "select * from t use index (i), u force key (j) where t.a = u.a"},
		{"bob", "pub", "select * from t partition (p0, p1) x, u where (x.a, u.b) = (1, 2)"},
		{"alice", "pub", "grant select on pub.* to x"},
		{"alice", "pub", "select * from priv.t join pub.t"},
		{"alice", "hr2", "select * from other.t"},
	}
	for _, a := range allowed {
		if err := c.Check(&query.Request{User: a.user, Database: a.db, SQL: a.sql}, "maria"); err != nil {
			t.Errorf("%s in %s: %q: %v, want allowed", a.user, a.db, a.sql, err)
		}
	}
	// The refusal names the database.
	err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: "select * from priv.t"}, "maria")
	if err == nil || !strings.Contains(err.Error(), `catalog "priv"`) {
		t.Errorf("the refusal: %v, want it to name catalog \"priv\"", err)
	}
	// A PostgreSQL group: two-part names are schema.table, the session's catalog decides.
	if err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: "select * from public.t"}, "prod"); err != nil {
		t.Errorf("bob on PostgreSQL in pub, public.t: %v", err)
	}
}

// prepared is sql within depth PREPAREs, each quoting the one inside by doubling its quotes
// (which every sql_mode reads alike: a backslash before a quote reads two ways).
func prepared(sql string, depth int) string {
	for range depth {
		sql = "prepare s from '" + strings.ReplaceAll(sql, "'", "''") + "'"
	}
	return sql
}

// TestCatalogScanTakesAnyText: the scan reads what a client sends before any engine parses it,
// so a statement cut short anywhere (a name, a list, a SHOW, a PREPARE) must be read without
// a panic; it names no database the rules refuse.
func TestCatalogScanTakesAnyText(t *testing.T) {
	c := mustCompile(t, catalogRulesConfig())
	for _, sql := range []string{"select * from t.", "select .", ";", ";;", "select 1;", "(", ")))", "show", "`", "select `pub`.",
		"select * from pub.*", "show tables from", "show create database", "drop database if exists", "prepare s from",
		"grant select on *.", "grant select on", "rename table t to", "create table t like", "select * from t partition ("} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%q: panic %v", sql, r)
				}
			}()
			if err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: sql}, "maria"); err != nil {
				t.Errorf("%q: %v, want allowed (it names no other database)", sql, err)
			}
		}()
	}
}
