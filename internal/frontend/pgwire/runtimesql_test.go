package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClientCannotEndAnotherClientsSessionThroughRunTimeSQL: PostgreSQL runs SQL a DO block
// or a function assembles ('select pg_' || 'cancel_backend(...)', format(...), a variable,
// string constants it joins across a newline), or hands query_to_xml, as the shared engine
// role, which may cancel every other client's backend. Each form is first run directly on
// PostgreSQL against a victim of its own (cancelled: 57014), then sent by Bob through the
// proxy (pgx, both protocols) against Alice's running statement: each is refused with 42501,
// and Alice's row arrives. A DO block that EXECUTEs one literal still runs.
func TestClientCannotEndAnotherClientsSessionThroughRunTimeSQL(t *testing.T) {
	addr, url, _, _ := coreServer(t, coreSetup{})
	direct := connect(t, url)
	alice := connect(t, proxyURL(addr, "alice"))
	bob := connect(t, proxyURL(addr, "bob"))
	attacks := []string{
		"do $$ begin execute 'select pg_' || 'cancel_backend(%d)'; end $$",
		"do $$ begin execute format('select pg_%%s(%%s)', 'cancel_backend', %d); end $$",
		"do $$ declare q text := concat('select pg_', 'cancel_backend(', %d, ')'); begin execute q; end $$",
		"do 'begin perform pg_cancel_'\n'backend(%d); end'",
		"select query_to_xml('select pg_' || 'cancel_backend(%d)', true, true, '')",
		"create or replace function pg_temp.qf_rt(q text) returns void language plpgsql as $$ begin execute q; end $$; " +
			"select pg_temp.qf_rt('select pg_' || 'cancel_backend(%d)')",
		"do language plpgsql $$ begin execute 'select pg_' || 'cancel' || '_backend(%d)'; end $$",
	}
	// A victim sleeps for secs: the oracle's victims long enough that only a cancel ends
	// them however loaded the machine is, Alice's short enough to end by itself.
	running := func(c *pgx.Conn, tag string, secs int) (int, chan error) {
		done := make(chan error, 1)
		go func() {
			var got string
			err := c.QueryRow(context.Background(), fmt.Sprintf("select pg_sleep(%d), '%s'", secs, tag)).Scan(nil, &got)
			if err == nil && got != tag {
				err = fmt.Errorf("row %q", got)
			}
			done <- err
		}()
		var pid int
		waitFor(t, 10*time.Second, func() bool {
			return direct.QueryRow(context.Background(), `select pid from pg_stat_activity where query like '%pg_sleep(%), '''
				|| $1 || '''%' and state = 'active'`, tag).Scan(&pid) == nil
		})
		return pid, done
	}

	// The oracle: directly on PostgreSQL, the DO forms cancel another backend of the role.
	victim := connect(t, url)
	for i, attack := range []string{attacks[0], attacks[3]} {
		pid, done := running(victim, fmt.Sprintf("qf-direct-victim-%d", i), 60)
		if _, err := direct.Exec(context.Background(), fmt.Sprintf(attack, pid)); err != nil {
			t.Fatalf("directly on PostgreSQL, %q: %v", attack, err)
		}
		var pe *pgconn.PgError
		if err := <-done; !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("directly on PostgreSQL, %q: its victim ended with %v, want 57014: the oracle does not hold", attack, err)
		}
	}

	pid, done := running(alice, "qf-victim-statement", 3)
	for _, attack := range attacks {
		stmt := fmt.Sprintf(attack, pid)
		for mode, m := range map[string]pgx.QueryExecMode{"simple": pgx.QueryExecModeSimpleProtocol, "extended": pgx.QueryExecModeExec} {
			if mode == "extended" && len(stmt) > 0 && stmt[:6] == "create" {
				continue // two statements: the simple protocol only
			}
			_, err := bob.Exec(context.Background(), stmt, m)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("%s %q: %v, want refused with 42501", mode, stmt, err)
			}
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("alice's statement: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("alice's statement did not end")
	}
	if _, err := bob.Exec(context.Background(), "do $$ begin execute 'select 1'; end $$"); err != nil {
		t.Fatalf("a DO block executing one literal: %v", err)
	}
}
