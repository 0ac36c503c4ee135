package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestClientSeesOnlyItsOwnEngineSession: every client of a cluster reaches PostgreSQL as the
// same engine role, and pg_stat_activity shows a role every statement of its backends. Alice
// runs a statement holding a secret literal; PostgreSQL itself shows it to anyone of the role
// (the direct connection), but Bob, through the proxy, on the passthrough and the Arrow path,
// in every protocol mode and every way of naming the view, sees only his own backend, and the
// functions under the view are refused.
func TestClientSeesOnlyItsOwnEngineSession(t *testing.T) {
	for _, setup := range []coreSetup{{}, {noPassthrough: true}} {
		addr, url, _, _ := coreServer(t, setup)
		direct := connect(t, url)
		alice := connect(t, proxyURL(addr, "alice"))
		bob := connect(t, proxyURL(addr, "bob"))
		const secret = "select pg_sleep(2), 'qf-secret-token-4711' /* alice */"
		done := make(chan error, 1)
		go func() {
			_, err := alice.Exec(context.Background(), secret)
			done <- err
		}()
		waitFor(t, 10*time.Second, func() bool { // the engine shows it to its role
			var n int
			err := direct.QueryRow(context.Background(),
				`select count(*) from pg_stat_activity where query like '%qf-secret-' || 'token%' and pid <> pg_backend_pid()`).Scan(&n)
			return err == nil && n > 0
		})
		for _, view := range []string{"pg_stat_activity", "pg_catalog.pg_stat_activity", `"pg_stat_activity"`, "PG_CATALOG.PG_STAT_ACTIVITY a"} {
			for mode, m := range pgxModes {
				var others, mine, seen int
				err := bob.QueryRow(context.Background(), fmt.Sprintf(
					`select count(*) filter (where query like '%%qf-secret-' || 'token%%'), count(*) filter (where pid = pg_backend_pid()), count(*) from %s`, view), m).
					Scan(&others, &mine, &seen)
				if err != nil || others != 0 || mine != 1 || seen != 1 {
					t.Errorf("passthrough %v, %s, %s: alice's %d, own %d, all %d rows (%v); want only bob's own",
						!setup.noPassthrough, mode, view, others, mine, seen, err)
				}
			}
		}
		for _, refused := range []string{
			"select query from pg_stat_get_activity(null)",
			"select pg_stat_get_backend_activity(s) from pg_stat_get_backend_idset() s",
			"select query_to_xml('select query from pg_stat_activity', true, true, '')",
			`select query_to_xml(E'select query from pg\x5fstat_activity', true, true, '')`, // the engine reads \x5f as _
			"do $$ begin raise notice '%', (select string_agg(query, ';') from pg_stat_activity); end $$",
		} {
			for mode, m := range pgxModes {
				_, err := bob.Exec(context.Background(), refused, m)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "42501" {
					t.Errorf("%s %q: %v, want refused with 42501", mode, refused, err)
				}
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("alice's statement: %v", err)
		}
	}
}
