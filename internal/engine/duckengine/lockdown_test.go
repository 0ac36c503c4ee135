package duckengine_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDuckDBLockedDown: by default a client reaches no host file, installs or loads no
// extension, and cannot unlock or reconfigure the database.
func TestDuckDBLockedDown(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.csv")
	e := openConns(t, 2, nil)
	attacks := []string{
		"select length(content) from read_text('" + secret + "')",
		"select * from read_csv('" + secret + "')",
		"select * from '" + secret + "'",
		"select * from glob('" + dir + "/*')",
		"copy (select 1) to '" + out + "'",
		"copy (select 1) to '/dev/stdout'",
		"export database '" + dir + "/export'",
		"attach '" + filepath.Join(dir, "x.db") + "' as x",
		"attach ':memory:' as x",
		"install httpfs",
		"load httpfs",
		"set enable_external_access = true",
		"set lock_configuration = false",
		"reset enable_external_access",
		"set global threads = 1",
		"set profiling_output = '" + out + "'",
		"set enable_progress_bar_print = true",
		"pragma enable_profiling",
	}
	for _, sql := range attacks {
		if c := code(e, sql); c == "" {
			t.Errorf("%s: allowed", sql)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a client wrote %s", out)
	}
	// Still allowed: the schema search path, and its own variables.
	run(t, e, "set search_path = 'main'")
	run(t, e, "set variable v = 1")
	if n := count(t, e, "select count(*) from range(3)"); n != "3" {
		t.Fatalf("plain query after the attacks: %s", n)
	}
}

// TestDuckDBExternalAccessByOperator: an operator can turn external access on for a cluster.
func TestDuckDBExternalAccessByOperator(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := openConns(t, 2, map[string]string{"enable_external_access": "true", "lock_configuration": "false"})
	if n := count(t, e, "select length(content) from read_text('"+file+"')"); n != "5" {
		t.Fatalf("read_text with external access on: %s", n)
	}
	run(t, e, "set threads = 1")
	// Never the daemon's own standard streams, whatever the configuration.
	run(t, e, "create table t(x integer)")
	for _, sql := range []string{"copy (select 1 as a, 2 as b, 3 as c, 4 as d, 5 as e, 6 as f, 7 as g) to stdout", "copy t from stdin", "COPY t TO STDOUT (FORMAT csv)"} {
		if c := code(e, sql); c != "0A000" {
			t.Errorf("%s: code %q, want 0A000", sql, c)
		}
	}
}

// TestDuckDBExtensionsStayOffWithExternalAccess: an operator who opens external access still
// gets no extension installed or loaded on its own, none from the community repository, and no
// persistent secret written to disk, unless the options say so too.
func TestDuckDBExtensionsStayOffWithExternalAccess(t *testing.T) {
	e := openConns(t, 2, map[string]string{"enable_external_access": "true"})
	for name, want := range map[string]string{"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
		"allow_community_extensions": "false", "allow_persistent_secrets": "false"} {
		if got := count(t, e, "select current_setting('"+name+"')::varchar"); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if c := code(e, "create persistent secret s (type s3, key_id 'a', secret 'b')"); c == "" {
		t.Error("a persistent secret was written")
	}
	opened := openConns(t, 2, map[string]string{"enable_external_access": "true", "autoload_known_extensions": "true"})
	if got := count(t, opened, "select current_setting('autoload_known_extensions')::varchar"); got != "true" {
		t.Errorf("the cluster's option did not win: autoload_known_extensions = %s", got)
	}
}
