package mysqlengine

import "testing"

// TestCommandTagReadsFirstKeyword: a statement's tag and whether it changes its session come
// from its first keyword after comments (an ORM's /* tag */ INSERT is an insert).
func TestCommandTagReadsFirstKeyword(t *testing.T) {
	for sql, want := range map[string]string{
		"INSERT INTO t VALUES (1)":          "INSERT 0 3",
		"/* app=x */ insert into t values ": "INSERT 0 3",
		"# tag\nUPDATE t SET a = 1":         "UPDATE 3",
		"delete from t;":                    "DELETE 3",
		"create table t (a int)":            "CREATE",
		"":                                  "OK 3",
	} {
		if got := commandTag(sql, 3); got != want {
			t.Errorf("commandTag(%q) = %q, want %q", sql, got, want)
		}
	}
	for sql, want := range map[string]bool{
		"SET @a = 1": true, "/* x */ set names utf8mb4": true, "LOCK TABLES t READ": true,
		"select 1": false, "-- set\nselect 1": false, "CREATE TEMPORARY TABLE t (a int)": true,
		"SELECT 1 INTO @v": true, "select a, b from t into @x, @y": true, "SELECT @n := 5": true, "select @n:=5": true, "SELECT (@`n`:=@n+1)": true,
		"SELECT @v, @@sql_mode": false, "SELECT 'a@b' INTO OUTFILE '/tmp/x'": false,
	} {
		if got := changesSession(sql); got != want {
			t.Errorf("changesSession(%q) = %v, want %v", sql, got, want)
		}
	}
}
