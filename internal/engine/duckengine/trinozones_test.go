package duckengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// A Trino client's zoned timestamp literals and AT TIME ZONE are DuckDB's wall times in their
// zone; a row constructor is a struct of anonymously named fields.
func TestTrinoZonesAndRowsRewritten(t *testing.T) {
	for in, want := range map[string]string{
		`select timestamp '2024-01-02 03:04:05 UTC' a`:                                                                        `select TIMESTAMP_S '2024-01-02 03:04:05' a`,
		`select timestamp '2024-01-02 03:04:05.123 America/New_York' b`:                                                       `select timezone('America/New_York', timezone('America/New_York', TIMESTAMP '2024-01-02 03:04:05.123'))::TIMESTAMP_MS b`,
		`select timestamp '2024-01-02 03:04:05.123456' AT TIME ZONE 'America/New_York' c`:                                     `select timezone('America/New_York', CAST(TIMESTAMP '2024-01-02 03:04:05.123456'  AS TIMESTAMPTZ)) c`,
		`select timestamp '2024-01-02 03:04:05.5 America/New_York' at time zone '-08:00' e`:                                   `select (timezone('UTC', timezone('America/New_York', TIMESTAMP '2024-01-02 03:04:05.5') ) + (-INTERVAL '8 hours 0 minutes')) e`,
		`select ts at time zone '+05:30' from t`:                                                                              `select (timezone('UTC', CAST(ts  AS TIMESTAMPTZ)) + INTERVAL '5 hours 30 minutes') from t`,
		`select timestamp '2024-01-02 03:04:05 +05:30' AT TIME ZONE 'UTC'`:                                                    `select timezone('UTC', timezone('UTC', TIMESTAMP '2024-01-02 03:04:05' - INTERVAL '5 hours 30 minutes') )`,
		`select row(1, 'a'), cast(row(2, 'b') as row(x integer, y varchar)), row(3, 4)[2] from t where row(a, b) = row(1, 2)`: `select {'#0': 1, '#1': 'a'}, cast(row(2, 'b') as row(x integer, y varchar)), qf_trino_subscript(row(3, 4), 2) from t where {'#0': a, '#1': b} = {'#0': 1, '#1': 2}`,
	} {
		if got := pgCompat(&query.Request{Protocol: query.ProtocolTrino, SQL: in}); got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
	}
}
