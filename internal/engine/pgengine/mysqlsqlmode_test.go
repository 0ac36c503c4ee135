package pgengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/mysqlmode"
)

// TestSQLModeTexts: which statements are a SET of sql_mode, and @@sql_mode's reads written as
// the connection's mode.
func TestSQLModeTexts(t *testing.T) {
	for sql, want := range map[string]int{ //determinism:ok each text is checked alone
		"SET sql_mode = 'A'":                              1,
		"set session sql_mode='A', @@sql_mode := 3":       2,
		"SET @@local.sql_mode = concat(@@sql_mode, ',B')": 1,
		"SET NAMES utf8mb4, sql_mode = ''":                1,
		"SET foreign_key_checks = 0, sql_mode = ''":       0,
		"SET sql_mode":      0,
		"SELECT @@sql_mode": 0,
		"set names utf8mb4": 0,
	} {
		modes, ok := mysqlSQLModeSet(sql)
		if len(modes) != want || ok != (want > 0) {
			t.Errorf("%s: %d assignments (%v), want %d", sql, len(modes), ok, want)
		}
	}
	for sql, want := range map[string]string{ //determinism:ok each text is checked alone
		"select @@sql_mode, @@SESSION.sql_mode x": "select 'M''X', 'M''X' x",
		"select @@global.sql_mode, @@sql_modes":   "select '" + mysqlmode.Default + "', @@sql_modes",
		"select concat(@@local.sql_mode,'y')":     "select concat('M''X','y')",
		"select 1":                                "select 1",
	} {
		if got := withSQLModeReads(sql, "M'X"); got != want {
			t.Errorf("%s:\n got  %s\n want %s", sql, got, want)
		}
	}
}
