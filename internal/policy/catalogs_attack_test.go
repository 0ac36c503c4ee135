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
		{"bob", "prepare s from 'select * from priv.t'"},
		{"bob", "execute immediate 'select * from priv.t where a = ?' using 1"},
		{"bob", prepared("select * from priv.t", 3)},
		{"bob", prepared("select * from pub.t", catalogTextDepthMax+1)},
		{"bob", "execute immediate 'select * from `priv`.t'"},
		{"bob", "begin not atomic select * from priv.t; end"},
		{"bob", "select * from information_schema.tables"},
		{"bob", "select * from mysql.user"},
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
		{"bob", "pub", prepared("select * from pub.t join u", catalogTextDepthMax)},
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

// prepared is sql within depth PREPAREs, each quoting the one inside as MySQL quotes.
func prepared(sql string, depth int) string {
	for range depth {
		sql = "prepare s from '" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(sql) + "'"
	}
	return sql
}
