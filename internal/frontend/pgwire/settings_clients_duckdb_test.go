package pgwire_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// settingsTxWant is what PostgreSQL 15 answers settings_tx.py and SettingsTx.java (checked
// against the server by TestSettingsThroughClientsOnPostgreSQL): the zone set by name, the
// startup option's statement_timeout, a transaction's SET LOCAL of both until its COMMIT,
// RESET back to the zone reported at login.
var settingsTxWant = map[string]string{
	"after_set":         "['GMT', 'GMT', 'GMT', 'GMT']",
	"statement_timeout": "['1234ms', '1234ms']",
	"set_local":         "['Zulu', 'Zulu', 'Zulu', 'Zulu', '1500ms', '1500ms', 'GMT', 'GMT', 'GMT', '1234ms']",
	"reset":             "['<login>', '<login>']",
}

// settingsTxWantJDBC is settingsTxWant as SettingsTx.java prints it (no timestamptz zone).
var settingsTxWantJDBC = map[string]string{
	"after_set":         "[GMT, GMT, GMT]",
	"statement_timeout": "[1234ms, 1234ms]",
	"set_local":         "[Zulu, Zulu, Zulu, 1500ms, 1500ms, GMT, GMT, 1234ms]",
	"reset":             "[<login>, <login>]",
}

func psycopgSettings(t *testing.T, d pgclienttest.DSN) string {
	t.Helper()
	out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "settings_tx.py", d.Host, d.PortString(), d.User, d.Database)
	if err != nil {
		t.Fatalf("settings_tx.py: %v\n%s", err, out)
	}
	return out
}

func jdbcSettings(t *testing.T, d pgclienttest.DSN) string {
	t.Helper()
	classpath := pgclienttest.JDBCClasspath(t, "SettingsTx.java")
	out, err := pgclienttest.Command(t, time.Minute, nil, "java", "-Duser.timezone=UTC", "-cp", classpath, "SettingsTx", d.JDBC())
	if err != nil {
		t.Fatalf("java SettingsTx: %v\n%s", err, out)
	}
	return out
}

// TestSettingsThroughPsycopgOnDuckDB: psycopg (3) reads the session's settings on the embedded
// DuckDB as on PostgreSQL: SHOW TimeZone after a SET, current_setting('statement_timeout') of
// its startup options, a transaction's SET LOCAL TIME ZONE and statement_timeout (SHOW,
// current_setting prepared, and the zone psycopg reads timestamptz values in, which is the
// TimeZone reported: before, the session's zone), RESET.
func TestSettingsThroughPsycopgOnDuckDB(t *testing.T) {
	pgclienttest.Expect(t, "psycopg on DuckDB", psycopgSettings(t, duckProxy(t, "transaction")), settingsTxWant)
}

// TestSettingsThroughJDBCOnDuckDB: the PostgreSQL JDBC driver, server-prepared statements from
// the first run, reads them as on PostgreSQL too (getParameterStatus for the zone reported).
func TestSettingsThroughJDBCOnDuckDB(t *testing.T) {
	testlong.Skip(t, "TestSettingsThroughPsycopgOnDuckDB") // a JVM's start and javac's
	pgclienttest.Expect(t, "JDBC on DuckDB", jdbcSettings(t, duckProxy(t, "transaction")), settingsTxWantJDBC)
}

// TestSettingsThroughClientsOnPostgreSQL holds the wants above to what PostgreSQL answers.
func TestSettingsThroughClientsOnPostgreSQL(t *testing.T) {
	testlong.Skip(t, "TestSettingsThroughPsycopgOnDuckDB") // the oracle of the wants, which change only with the scripts
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	d := pgclienttest.DSN{Host: u.Hostname(), User: u.User.Username(), Database: strings.TrimPrefix(u.Path, "/")}
	if d.Port, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	pgclienttest.Expect(t, "psycopg on PostgreSQL", psycopgSettings(t, d), settingsTxWant)
	pgclienttest.Expect(t, "JDBC on PostgreSQL", jdbcSettings(t, d), settingsTxWantJDBC)
}
