package policy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestCatalogRuleBypassesThroughHowMariaDBReadsText: bob, limited to database pub on a MariaDB
// group, names priv where the scan did not look for a name (each passed before, and each runs
// on MariaDB 10.11 as written): MariaDB's own executable comments (/*M!), table references in
// parentheses, USE sent to the engine (a multi-statement, a comment first), an index's table,
// text run as SQL from a variable or an expression (PREPARE FROM @q, EXECUTE IMMEDIATE
// CONCAT(...), adjacent literals MySQL joins), and a string that ends elsewhere once the
// session has SET sql_mode NO_BACKSLASH_ESCAPES. Look-alikes that name only pub stay allowed.
func TestCatalogRuleBypassesThroughHowMariaDBReadsText(t *testing.T) {
	c := mustCompile(t, catalogRulesConfig())
	refused := []string{
		"select * from /*M!100000 priv.t */",
		"select * from /*M! priv.t */",
		"select * from pub.t /*M!100100 , priv.t */",
		"select * from (priv.t)",
		"select * from ((priv.t))",
		"select * from pub.t join (priv.t join pub.u)",
		"select * from pub.t, (priv.t)",
		"select * from pub.t left join (pub.u, priv.t) on true",
		"use priv; select * from t",
		"/* c */ use priv",
		"USE `priv`",
		"drop index i on priv.t",
		"create unique index i on priv.t (a)",
		"prepare s from @q",
		"prepare s from concat('select * from pr', 'iv.t')",
		"prepare s from 'select * from pr' 'iv.t'",
		"prepare s from 0x73656c656374202a2066726f6d20707269762e74",
		"execute immediate @q",
		"execute immediate concat('select * from pr', 'iv.t')",
		"execute immediate 'select * from pr' 'iv.t'",
		"execute immediate _utf8mb4'select * from pr' 'iv.t'",
		`select * from pub.t where a = 'x\' union select * from priv.t -- '`,
		`select * from pub.t where a = "x\" union select * from priv.t -- "`,
		`prepare s from 'select 1 where ''\'' union select * from priv.t -- '`,
	}
	for _, sql := range refused {
		if err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: sql}, "maria"); code(err) != query.CodeAccessDenied {
			t.Errorf("bob in pub: %q: %v, want access denied", sql, err)
		}
	}
	allowed := []string{
		"select * from (pub.t)",
		"select * from (select a from t) x join (u) on x.a = u.a",
		"select * from t where (t.a, t.b) in ((1, 2))",
		"insert into t (a, b) values (1, 2)",
		"select * from t join u using (a)",
		"use pub",
		"use pub; select * from t",
		"drop index i on t",
		"create index i on pub.t (a)",
		"prepare s from 'select * from t where a = ?'",
		"prepare s from 'select * from pub.t' ' join u'",
		"prepare s from _utf8mb4'select 1'",
		"execute s using @a",
		"execute s",
		"execute immediate 'select * from t where a = ?' using 1",
		"select * from /*M!100000 pub.t */",
		`select * from t where a = 'it''s' and b = "x"`,
		"set @q = 'select * from priv.t'",
	}
	for _, sql := range allowed {
		if err := c.Check(&query.Request{User: "bob", Database: "pub", SQL: sql}, "maria"); err != nil {
			t.Errorf("bob in pub: %q: %v, want allowed", sql, err)
		}
	}
}
