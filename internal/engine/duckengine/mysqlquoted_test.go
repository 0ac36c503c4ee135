package duckengine_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestMySQLQuotedInformationSchemaAndOwnDatabasesDrop: TypeORM's second start reads
// `INFORMATION_SCHEMA`.`TABLES` (both names quoted), which DuckDB's own view answered without
// the client's tables (so TypeORM created them again: 1050); its dropSchema, in a transaction
// with FOREIGN_KEY_CHECKS=0, drops `db`.`t` of its own database, refused for a referenced table
// (1451) where t alone was dropped.
func TestMySQLQuotedInformationSchemaAndOwnDatabasesDrop(t *testing.T) {
	e := open(t)
	session := sessionOn(t, e, ",")
	db := ""
	run := func(sql string) string {
		out, err := session(&query.Request{SQL: sql, Protocol: query.ProtocolMySQL, Database: db})
		if err != nil {
			return "error: " + err.Error()
		}
		return out
	}
	db = run("select database()")
	for _, stmt := range []string{"create table pa (id int primary key)", "create table ch (id int, p int, foreign key (p) references pa (id))"} {
		if got := run(stmt); got != "" {
			t.Fatalf("%s: %s", stmt, got)
		}
	}
	tables := "SELECT `TABLE_NAME` FROM `INFORMATION_SCHEMA`.`TABLES` WHERE `TABLE_SCHEMA` = '" + db + "' ORDER BY `TABLE_NAME`"
	if got := run(tables); got != "ch,pa" {
		t.Errorf("quoted information_schema.tables: %q", got)
	}
	for _, stmt := range []string{"set foreign_key_checks = 0", "start transaction", "drop table if exists `" + db + "`.`pa`",
		"drop table if exists `" + db + "`.`ch`", "commit", "set foreign_key_checks = 1"} {
		if got := run(stmt); got != "" {
			t.Errorf("%s: %s", stmt, got)
		}
	}
	if got := run(tables); got != "" {
		t.Errorf("tables left: %q", got)
	}
}
