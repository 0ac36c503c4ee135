package pgwire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestClientCannotReachTheEngineHostsFilesOrPrograms: the cluster's engine role here is a
// superuser, which runs programs on the database host and reads its files (the direct
// connection shows it). Through the proxy, on the passthrough and the Arrow path and in every
// protocol mode, a client's COPY ... TO PROGRAM, pg_read_file, lo_import and the same in a DO
// block are refused with 42501.
func TestClientCannotReachTheEngineHostsFilesOrPrograms(t *testing.T) {
	for _, setup := range []coreSetup{{}, {noPassthrough: true}} {
		addr, url, _, _ := coreServer(t, setup)
		direct := connect(t, url)
		if _, err := direct.Exec(context.Background(), "copy (select 1) to program 'cat > /dev/null'"); err != nil {
			t.Fatalf("the engine role cannot run programs (the test needs one that can): %v", err)
		}
		bob := connect(t, proxyURL(addr, "bob"))
		for _, attack := range []string{
			"copy (select 1) to program 'cat > /dev/null'",
			"select length(pg_read_file('/etc/hostname'))",
			"select lo_import('/etc/hostname')",
			"do $$ begin copy (select 1) to program 'cat > /dev/null'; end $$",
			"do $$ begin execute 'copy (select 1) to program ''cat > /dev/null'''; end $$",
		} {
			for mode, m := range pgxModes {
				_, err := bob.Exec(context.Background(), attack, m)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "42501" {
					t.Errorf("passthrough %v, %s %q: %v, want refused with 42501", !setup.noPassthrough, mode, attack, err)
				}
			}
		}
	}
}
