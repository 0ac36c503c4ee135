package mysqlwire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// The values at the edges of what clients send and read, through every client library, on the
// embedded DuckDB (the Arrow path) and on MariaDB (relayed): text beyond the Basic Multilingual
// Plane, quotes and backslashes in parameters (which PyMySQL and mysqlclient write into the
// statement's text, escaped the MySQL way), 100 KB out and 200 KB in, a result of 2 MB, NULL in
// every column type, a prepared statement of 300 parameters and columns, NULLs at every byte edge
// of the binary protocol's NULL bitmaps, backquoted names, # comments and LIMIT offset, count.

// edgeText has a 2-, 3- and 4-byte UTF-8 character, both quotes, backslashes and a newline.
const edgeText = "O'Brien \"q\" C:\\temp\\new ü€ 𝄞😀 日本語\nend"

// edgeColumns is a column of each type both engines have, after id.
const edgeColumns = "c1 INTEGER, c2 BIGINT, c3 SMALLINT, c4 DOUBLE, c5 DECIMAL(10,2), c6 VARCHAR(40), " +
	"c7 DATE, c8 DATETIME, c9 TIME, c10 BLOB, c11 TEXT, c12 BOOLEAN"

// edgeRows are what edge_t holds: a row of NULLs, a row of values, and NULLs and values in turn.
var edgeRows = [][]any{
	{1, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	{2, 7, int64(8000000000), -3, 2.5, "1.50", "väl😀", "2024-02-29", "2024-02-29 13:14:15", "13:14:15", nil, "text", nil},
	{3, 9, nil, 4, nil, "2.25", nil, "2000-01-01", nil, "10:00:01", nil, "", nil},
}

// edgeCells is edgeRows as client prints them from target ("duck" or "maria"), read in the
// binary protocol or not. A TIME of whole seconds is sent without digits by both (MariaDB's
// TIME has none; DuckDB's has six, the frontend leaves zeros out), but DuckDB's column says six
// decimals (it has no precision of its own), which go-sql-driver writes in the binary protocol.
// A DATETIME has none on both.
func edgeCells(client, target string, binary bool) [][]any {
	out := make([][]any, len(edgeRows))
	for i, row := range edgeRows {
		out[i] = make([]any, len(row))
		for j, v := range row {
			if v == nil {
				continue
			}
			out[i][j] = fmt.Sprint(v)
			if j == 9 && client == "go-sql-driver" && binary && target == "duck" {
				out[i][j] = fmt.Sprint(v, ".000000")
			}
		}
	}
	return out
}

// cellsJSON is rows as the session scripts print them.
func cellsJSON(rows [][]any) string {
	b, err := json.Marshal(rows)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// edgeSteps is the edge session of client on dialect d (strCast: the engine's CAST(? AS ...) of
// a string; columns: edgeColumns as the engine writes them).
func edgeSteps(client string, d sessionDialect, strCast, columns string) []sessionStep {
	big := strings.Repeat("ab", 50_000)
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(edgeRows[0])), ", ")
	steps := []sessionStep{
		{SQL: "CREATE TABLE edge_t (id INTEGER, " + columns + ")", want: `"affected 0"`},
		{SQL: "SELECT 'ü€𝄞😀日本語' AS s, '' AS e, NULL AS n", want: cellsJSON([][]any{{"ü€𝄞😀日本語", "", nil}})},
		{SQL: "SELECT ? AS s", Params: []any{edgeText}, Prepared: true, want: cellsJSON([][]any{{edgeText}})},
		{SQL: fmt.Sprintf("SELECT CAST(? AS %s) AS s, ? AS n", strCast), Params: []any{`\`, nil}, Prepared: true, want: cellsJSON([][]any{{`\`, nil}})},
		{SQL: "SELECT REPEAT('ab', 50000) AS s", want: cellsJSON([][]any{{big}})},
		{SQL: fmt.Sprintf("SELECT LENGTH(CAST(? AS %s)) AS n", strCast), Params: []any{big + big}, Prepared: true, want: `[["200000"]]`},
	}
	for _, row := range edgeRows {
		steps = append(steps, sessionStep{SQL: "INSERT INTO edge_t VALUES (" + marks + ")", Params: row, Prepared: true, want: `"affected 1"`})
	}
	steps = append(steps,
		sessionStep{SQL: "SELECT * FROM edge_t ORDER BY id", want: cellsJSON(edgeCells(client, d.name, false))},
		sessionStep{SQL: "SELECT * FROM edge_t WHERE id > ? ORDER BY id", Params: []any{0}, Prepared: true, want: cellsJSON(edgeCells(client, d.name, true))},
		// Names in backquotes, as ORMs and mysql2's escapeId write them.
		sessionStep{SQL: "SELECT `id`, `c6` AS `the ``name``` FROM `edge_t` WHERE `c6` = ?", Params: []any{"väl😀"}, Prepared: true,
			want: `[["2","väl😀"]]`},
		// MySQL's # comments and LIMIT offset, count.
		sessionStep{SQL: "SELECT c6 FROM edge_t ORDER BY id LIMIT 1, 1 # the second row", want: `[["väl😀"]]`},
		// Hexadecimal literals are bytes (the scripts print bytes in hex, go-sql-driver as text).
		sessionStep{SQL: "SELECT X'4142' AS x, 0x4142 AS y", want: hexWant(client)},
	)
	// 300 parameters and columns, NULL in the last and either side of each byte's edge of the
	// NULL bitmaps (parameters: bit n; result rows: bit n+2).
	var params []any
	var row []any
	var cols []string
	for i := range 300 {
		cols = append(cols, fmt.Sprintf("? AS p%d", i))
		var v any = fmt.Sprintf("v%d", i)
		if k := i % 8; k == 0 || k == 5 || k == 6 || k == 7 || i == 299 {
			v = nil
		}
		params, row = append(params, v), append(row, v)
	}
	steps = append(steps, sessionStep{SQL: "SELECT " + strings.Join(cols, ", "), Params: params, Prepared: true, want: cellsJSON([][]any{row})})
	// 20,000 rows of about 110 bytes: a result of more than 2 MB.
	var rows [][]any
	for x := range 20_000 {
		rows = append(rows, []any{fmt.Sprint(x), strings.Repeat("y", 100)})
	}
	steps = append(steps, sessionStep{SQL: fmt.Sprintf("SELECT x AS n, REPEAT('y', 100) AS s FROM %s ORDER BY x", d.rows(20_000)), want: cellsJSON(rows)})
	return steps
}

// hexWant is X'4142' and 0x4142 (the bytes AB) as client prints them.
func hexWant(client string) string {
	if client == "go-sql-driver" {
		return `[["AB","AB"]]`
	}
	return `[["4142","4142"]]`
}

// sameJSON reports whether two JSON texts hold the same value (the Python scripts escape what
// is not ASCII, node and Go do not).
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}

// TestClientEdgeValues runs the edge session through each client library on DuckDB and on
// MariaDB: every answer is the value sent or stored.
func TestClientEdgeValues(t *testing.T) {
	for _, target := range []string{"duck", "maria"} {
		for _, client := range sessionClients {
			t.Run(target+"/"+client, func(t *testing.T) {
				var addr, db string
				var steps []sessionStep
				if target == "duck" {
					eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { eng.Close() })
					addr, steps = serveCore(t, "duck", eng, coreSetup{}).addr, edgeSteps(client, duckDialect, "VARCHAR", edgeColumns)
				} else {
					f := coreServer(t, coreSetup{})
					addr, db, steps = f.addr, f.dbName, edgeSteps(client, mariaDialect, "CHAR", edgeColumns)
				}
				var got map[string]string
				if client == "go-sql-driver" {
					got = goSQLSession(t, addr, db, steps)
				} else {
					got = scriptSession(t, client, addr, db, steps)
				}
				for i, s := range steps {
					if g := got[fmt.Sprint("step ", i)]; !sameJSON(g, s.want) {
						t.Errorf("%s, step %d %.120q: %.400s, want %.400s", client, i, s.SQL, g, s.want)
					}
				}
			})
		}
	}
}

// TestDatesBeyondMySQLsRangeInTheBinaryProtocol: DuckDB's dates and timestamps whose year is
// not 0 to 9999 (infinity, years BC, past 9999) reach go-sql-driver's binary protocol as NULL,
// as MySQL answers a date that overflows, and the others as themselves. Their year's two bytes
// wrapped before: go-sql-driver panicked formatting year 48876 (infinity's 5881580 wrapped).
func TestDatesBeyondMySQLsRangeInTheBinaryProtocol(t *testing.T) {
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	db := openDB(t, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "", "")
	rows, err := db.Query(`SELECT date 'infinity' AS a, date '-0044-03-15' AS b, timestamp '12024-02-29 13:14:15' AS c,
		timestamp '-infinity' AS d, date '2024-02-29' AS e, timestamp '9999-12-31 23:59:59' AS f, date '0001-01-01' AS g WHERE 1 = ?`, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := frontendtest.ScanAll(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := `[[<nil> <nil> <nil> <nil> 2024-02-29 9999-12-31 23:59:59.000000 0001-01-01]]`
	if s := fmt.Sprintf("%s", got); s != want {
		t.Fatalf("%s, want %s", s, want)
	}
}
