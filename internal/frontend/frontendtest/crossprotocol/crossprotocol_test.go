package crossprotocol

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	gomysql "github.com/go-sql-driver/mysql"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/query"
)

// kind says how to compare a column's values across protocols.
type kind int

const (
	kInt kind = iota
	kFloat
	kDecimal
	kString
	kBinary
	kDate
	kTimestamp
)

// client runs a query through one protocol and returns its rows as Go values.
type client func(t *testing.T, sql string) ([][]any, error)

func listen(t *testing.T) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func startAll(t *testing.T, backend query.Backend, dbName string) map[string]client {
	// MySQL wire, through go-sql-driver (text protocol).
	ms, err := mysqlwire.NewServer(backend, mysqlwire.Options{LoopbackUser: "queryflux"})
	if err != nil {
		t.Fatal(err)
	}
	ml := listen(t)
	go ms.Serve(ml)
	t.Cleanup(func() { ms.Close() })
	mdb, err := sql.Open("mysql", "queryflux@tcp("+ml.Addr().String()+")/"+dbName+"?parseTime=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mdb.Close() })

	// Trino HTTP, through trino-go-client.
	ts, err := trinohttp.NewServer(backend, trinohttp.Options{PageRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	tl := listen(t)
	go ts.Serve(tl)
	t.Cleanup(func() { ts.Close() })
	tdb := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + tl.Addr().String(), Schema: dbName})

	// Flight SQL, through arrow-go's client.
	fs, err := flightsql.NewServer(backend, flightsql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fl := listen(t)
	go fs.Serve(fl)
	t.Cleanup(func() { fs.Close() })
	fc := frontendtest.DialFlight(t, fl.Addr().String())

	return map[string]client{
		"mysqlwire": func(t *testing.T, q string) ([][]any, error) { return sqlRows(mdb, q) },
		"trinohttp": func(t *testing.T, q string) ([][]any, error) { return sqlRows(tdb, q) },
		"flightsql": func(t *testing.T, q string) ([][]any, error) { return flightRows(fc, q) },
	}
}

func sqlRows(db *sql.DB, q string) ([][]any, error) {
	return frontendtest.QueryAll(context.Background(), db, q)
}

func flightRows(c *fsql.Client, q string) ([][]any, error) {
	return frontendtest.FlightRows(context.Background(), c, q, func(col arrow.Array, i int) any {
		switch {
		case col.IsNull(i):
			return nil
		case col.DataType().ID().String() == "BINARY":
			return col.(*array.Binary).Value(i)
		default:
			return col.ValueStr(i)
		}
	})
}

// canon renders a value of a column kind the same way whatever protocol delivered it.
func canon(k kind, v any) string {
	if v == nil {
		return "NULL"
	}
	s := fmt.Sprint(v)
	switch x := v.(type) {
	case []byte:
		if k == kBinary {
			return fmt.Sprintf("%x", x)
		}
		s = string(x)
	case time.Time:
		if k == kDate {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format("2006-01-02 15:04:05.000000")
	}
	switch k {
	case kInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			u, uerr := strconv.ParseUint(s, 10, 64)
			if uerr != nil {
				return "bad int " + s
			}
			return strconv.FormatUint(u, 10)
		}
		return strconv.FormatInt(n, 10)
	case kFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "bad float " + s
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case kDecimal:
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	case kBinary: // Arrow's text form of binary is base64
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return fmt.Sprintf("%x", b)
		}
		return s
	case kDate:
		return s[:10]
	case kTimestamp:
		t, err := time.Parse("2006-01-02T15:04:05.999999999", strings.Replace(s, " ", "T", 1))
		if err != nil {
			return "bad timestamp " + s
		}
		return t.Format("2006-01-02 15:04:05.000000")
	}
	return s
}

func TestSameValuesThroughEveryProtocol(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	frontendtest.Exec(t, eng, `CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20), d DECIMAL(10,2), f DOUBLE, dt DATE,
		ts DATETIME(6), b VARBINARY(8), u BIGINT UNSIGNED)`)
	frontendtest.Exec(t, eng, `INSERT INTO t VALUES
		(1, 'héllo', 12.50, 0.25, '2024-02-29', '2024-02-29 13:14:15.123456', X'00FF', 18000000000000000000),
		(2, 'it''s', -0.01, -1e100, '1970-01-01', '1999-12-31 23:59:59.000001', X'', 0),
		(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`)
	clients := startAll(t, frontendtest.NewBackend(eng), dbName)
	cases := []struct {
		sql   string
		kinds []kind
	}{
		{"SELECT 40+2", []kind{kInt}},
		{"SELECT id, s, d, f, dt, ts, b, u FROM t ORDER BY id", []kind{kInt, kString, kDecimal, kFloat, kDate, kTimestamp, kBinary, kInt}},
		{"SELECT COUNT(*), SUM(id), MAX(s) FROM t", []kind{kInt, kDecimal, kString}},
		{"SELECT seq FROM seq_1_to_25 WHERE seq % 7 = 0", []kind{kInt}},
	}
	for _, c := range cases {
		results := map[string]string{}
		for name, run := range clients {
			rows, err := run(t, c.sql)
			if err != nil {
				t.Fatalf("%s via %s: %v", c.sql, name, err)
			}
			var b strings.Builder
			for _, row := range rows {
				for i, v := range row {
					b.WriteString(canon(c.kinds[i], v))
					b.WriteByte('|')
				}
				b.WriteByte('\n')
			}
			results[name] = b.String()
		}
		if results["mysqlwire"] != results["trinohttp"] || results["mysqlwire"] != results["flightsql"] {
			t.Errorf("%s differs:\nmysqlwire:\n%s\ntrinohttp:\n%s\nflightsql:\n%s", c.sql, results["mysqlwire"], results["trinohttp"], results["flightsql"])
		}
		t.Logf("%s:\n%s", c.sql, results["trinohttp"])
		if results["mysqlwire"] == "" {
			t.Errorf("%s: no rows", c.sql)
		}
	}
	// The same error reaches every client with MariaDB's SQLSTATE.
	for name, run := range clients {
		_, err := run(t, "SELECT * FROM no_such_table")
		var me *gomysql.MySQLError
		switch {
		case err == nil:
			t.Errorf("%s: no error", name)
		case name == "mysqlwire" && !(errors.As(err, &me) && me.Number == 1146):
			t.Errorf("%s: %v", name, err)
		case !strings.Contains(err.Error(), "no_such_table"):
			t.Errorf("%s: %v", name, err)
		}
	}
}
