package duckengine

import (
	"fmt"
	"testing"
)

// TestReadRowUpsertKeepsEachValuesArguments: a row's values and an assignment's own parameters
// keep their arguments, in order, as the statement's parts move them.
func TestReadRowUpsertKeepsEachValuesArguments(t *testing.T) {
	sqlText := "INSERT INTO `sq_users` (`id`,`username`,`name`) VALUES (?,?,?),(?, 'x', ?) ON DUPLICATE KEY UPDATE `id`=VALUES(`id`),`name`=concat(?, VALUES(`name`), ?);"
	u, ok := readRowUpsert(sqlText, []any{1, "ann", "Ann", 2, "X", "<", ">"})
	if !ok {
		t.Fatal("not read")
	}
	if got := fmt.Sprint(u.rows); got != "[[{? [1]} {? [ann]} {? [Ann]}] [{? [2]} {'x' []} {? [X]}]]" {
		t.Errorf("rows: %s", got)
	}
	sets, ok := u.setsFor(sqlText, u.rows[1], []string{"id"})
	if got := fmt.Sprint(sets); !ok || got != "[{`name` = concat(?, (?), ?) [< X >]}]" {
		t.Errorf("sets: %s %v", got, ok)
	}
	for _, bad := range []string{
		"INSERT IGNORE INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
		"INSERT INTO t SET a = 1 ON DUPLICATE KEY UPDATE a = 2",
		"INSERT INTO t (a, b) VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
	} {
		if _, ok := readRowUpsert(bad, nil); ok {
			t.Errorf("read: %s", bad)
		}
	}
	// a SELECT's rows are read when it runs; the SELECT ends where ON DUPLICATE KEY UPDATE starts
	sel, ok := readRowUpsert("INSERT INTO t (a) SELECT x FROM s WHERE y = ? ON DUPLICATE KEY UPDATE a = ?", []any{1, 2})
	if got := fmt.Sprint(sel.selected, sel.sets[0].args); !ok || got != "{SELECT x FROM s WHERE y = ? [1]} [2]" {
		t.Errorf("SELECT: %s %v", got, ok)
	}
	if _, ok := readRowUpsert("INSERT INTO t (a) VALUES (?) ON DUPLICATE KEY UPDATE a = 2", nil); ok {
		t.Error("read with an argument missing")
	}
}
