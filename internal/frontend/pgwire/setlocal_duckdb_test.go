package pgwire_test

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// txSettingsScript is what TestTransactionSettingsAsPostgreSQLOnDuckDB runs, statement by
// statement: SET LOCAL TIME ZONE in a transaction and its end (COMMIT, ROLLBACK, a failed
// transaction, a released savepoint), a plain SET a ROLLBACK undoes, SET LOCAL outside a
// transaction and in a failed one, RESET and its spellings, and SET LOCAL of the timeouts read
// back by SHOW and current_setting. The zones are UTC's other names: the login zones differ
// (Etc/UTC on the test server, UTC here), so "UTC" and "Etc/UTC" are left to RESET.
var txSettingsScript = []string{
	"set time zone 'GMT'", // both servers' zone from here on; its own answer is not compared
	"begin", "set local time zone 'Zulu'", "show timezone",
	"select current_setting('TimeZone'), '2024-01-02 03:04:05+00'::timestamptz", "commit", "show timezone",
	"begin", "set time zone 'UCT'", "set local timezone to 'Universal'", "show time zone", "commit", "show timezone",
	"begin", "set time zone 'Greenwich'", "set local time zone 'Zulu'", "rollback", "show timezone",
	"begin", "set local timezone = 'Zulu'", "select 1/0", "show timezone", "rollback", "select current_setting('TimeZone')",
	"begin", "set local time zone 'Zulu'", "select 1/0", "commit", "show timezone",
	"begin", "savepoint a", "set local time zone 'Etc/UCT'", "release savepoint a", "show timezone", "commit", "show timezone",
	"set local time zone 'Zulu'", "show timezone",
	"begin", "set local time zone 'Mars/Phobos'", "rollback",
	"begin", "select 1/0", "set local time zone 'Zulu'", "set time zone 'Zulu'", "rollback", "show timezone",
	"begin", "set local time zone default", "show timezone", "commit", "show timezone",
	"begin", "set local statement_timeout = '1500'", "show statement_timeout", "select current_setting('statement_timeout')",
	"set local lock_timeout = '2s'", "show lock_timeout", "select current_setting('lock_timeout')",
	"set local deadlock_timeout = 250", "show deadlock_timeout", "select current_setting('deadlock_timeout')",
	"commit", "show statement_timeout", "show lock_timeout", "select current_setting('deadlock_timeout')",
	"reset timezone", "show timezone", "set time zone 'GMT'", "set time zone default", "select current_setting('TimeZone')",
	"set time zone 'GMT'", "set time zone local", "show timezone", "set timezone to 'GMT'", "reset time zone", "show timezone",
}

// txSettingsTrace runs txSettingsScript on addr, each statement alone (a Query, or
// Parse/Bind/Describe/Execute/Sync), and returns each one's answer: the TimeZone reported before
// its ReadyForQuery (the login zone written <login>), notices, rows, tag or error, status.
func txSettingsTrace(t *testing.T, addr, user, database string, extended bool) []string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user, "database": database}})
	login := ""
	answer := func() string {
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatalf("receive: %v (so far %q)", err, out)
			}
			switch m := msg.(type) {
			case *pgproto3.ReadyForQuery:
				return strings.Join(append(out, fmt.Sprintf("ready %c", m.TxStatus)), "; ")
			case *pgproto3.ParameterStatus:
				if m.Name == "TimeZone" {
					if login == "" {
						login = m.Value
					}
					v := m.Value
					if v == login {
						v = "<login>"
					}
					out = append(out, "TimeZone="+v)
				}
			case *pgproto3.NoticeResponse:
				out = append(out, m.Severity+" "+m.Code)
			case *pgproto3.DataRow:
				var vals []string
				for _, v := range m.Values {
					if string(v) == login {
						v = []byte("<login>")
					}
					vals = append(vals, string(v))
				}
				out = append(out, fmt.Sprintf("row %q", vals))
			case *pgproto3.CommandComplete:
				out = append(out, string(m.CommandTag))
			case *pgproto3.ErrorResponse:
				out = append(out, "error "+m.Code)
			case *pgproto3.AuthenticationCleartextPassword, *pgproto3.AuthenticationMD5Password, *pgproto3.AuthenticationSASL:
				t.Fatalf("%s asks for a password", addr)
			}
		}
	}
	answer() // the login
	var trace []string
	for i, sql := range txSettingsScript {
		if extended {
			fe.SendParse(&pgproto3.Parse{Query: sql})
			fe.SendBind(&pgproto3.Bind{})
			fe.SendDescribe(&pgproto3.Describe{ObjectType: 'P'})
			fe.SendExecute(&pgproto3.Execute{})
			fe.SendSync(&pgproto3.Sync{})
		} else {
			fe.Send(&pgproto3.Query{String: sql})
		}
		if a := answer(); i > 0 {
			trace = append(trace, sql+": "+a)
		}
	}
	return trace
}

// TestTransactionSettingsAsPostgreSQLOnDuckDB: a transaction's settings on the embedded DuckDB
// answer as PostgreSQL's, message for message, in the simple and the extended protocol: SET
// LOCAL TIME ZONE is reported (ParameterStatus) and answered by SHOW and current_setting until
// the transaction ends, then the zone before it is reported again (before: it went to DuckDB's
// own setting, unreported, and SHOW answered the session's zone); a ROLLBACK undoes a plain
// SET; SET LOCAL outside a transaction warns and changes nothing, in a failed one fails 25P02;
// SHOW and current_setting of the timeouts answer their SET LOCAL (before: the startup
// options'); RESET sets back the zone reported at login (before: UTC whatever login said).
func TestTransactionSettingsAsPostgreSQLOnDuckDB(t *testing.T) {
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	d := duckProxy(t, "transaction")
	// The same engine behind a frontend that reports PostgreSQL's Etc/UTC at login (as it does
	// when the proxy's PostgreSQL servers say so) while writing the rows itself: RESET is that.
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	etcUTC := startServer(t, loginZoneEngine{describingEngine{&oneEngine{e: e}}}, pgwireTrustAll())
	for _, extended := range []bool{false, true} {
		want := txSettingsTrace(t, u.Host, u.User.Username(), strings.TrimPrefix(u.Path, "/"), extended)
		for addr, got := range map[string][]string{
			"login UTC":     txSettingsTrace(t, d.Host+":"+d.PortString(), d.User, d.Database, extended),
			"login Etc/UTC": txSettingsTrace(t, etcUTC, "postgres", "demo", extended),
		} {
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s, extended %v:\n got %s\nwant %s", addr, extended, got[i], want[i])
				}
			}
		}
	}
}

// loginZoneEngine is a backend whose PostgreSQL servers report Etc/UTC (proxy.Core.LoginTimeZone).
type loginZoneEngine struct{ describingEngine }

func (loginZoneEngine) LoginTimeZone() string { return "Etc/UTC" }
