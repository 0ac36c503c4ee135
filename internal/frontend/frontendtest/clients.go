package frontendtest

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The client side the frontend and end-to-end tests share: database/sql result reading, a
// trino-go-client handle, a Flight SQL client and its Execute+DoGet round trip, and where the
// node and Python client libraries are.

// NodeClients is the directory make test-deps installs the node client libraries into (a
// script run there requires them); without module or node, t skips, saying so.
func NodeClients(t testing.TB, module string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "nodeclients")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", module)); err != nil {
		t.Skipf("node module %s is not installed (make test-deps installs it; its install failed): %v", module, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (make test-deps installs it; its install failed)")
	}
	return dir
}

// PythonWith is a python3 that imports module; without one, t skips, saying so. The answer is
// found once per module and test binary: finding it starts each interpreter in turn (pyenv's
// shim first, a shell script that took 7 s at load 36 to report that its python lacks
// pymysql), and tests call it for every client run.
func PythonWith(t testing.TB, module string) string {
	t.Helper()
	pythons.mu.Lock()
	defer pythons.mu.Unlock()
	p, found := pythons.with[module]
	if !found {
		for _, try := range []string{"python3", "/usr/bin/python3"} { // pyenv's, Debian's packages
			pythons.probes++
			if exec.Command(try, "-c", "import "+module).Run() == nil {
				p = try
				break
			}
		}
		if pythons.with == nil {
			pythons.with = map[string]string{}
		}
		pythons.with[module] = p
	}
	if p == "" {
		t.Skipf("python3 with %s is not installed (make test-deps installs it; its install failed)", module)
	}
	return p
}

// pythons are PythonWith's answers by module ("": none imports it).
var pythons struct {
	mu   sync.Mutex
	with map[string]string
	// probes counts the interpreters started to find them (tests).
	probes int
}

// ScanAll reads every row of rows as the driver's values and closes rows.
func ScanAll(rows *sql.Rows) ([][]any, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// QueryAll runs q on db and reads every row as the driver's values.
func QueryAll(ctx context.Context, db *sql.DB, q string) ([][]any, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows)
}

// MapCells converts every cell of rows with cell (nil stays nil).
func MapCells[T, U any](rows [][]T, cell func(T) U) [][]U {
	if rows == nil {
		return nil
	}
	out := make([][]U, 0, len(rows))
	for _, r := range rows {
		row := make([]U, len(r))
		for i, v := range r {
			row[i] = cell(v)
		}
		out = append(out, row)
	}
	return out
}

// OpenTrino opens a database/sql handle through trino-go-client; it is closed when t ends.
func OpenTrino(t testing.TB, cfg trino.Config) *sql.DB {
	t.Helper()
	dsn, err := cfg.FormatDSN()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("trino", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// NewFlightClient is an arrow-go Flight SQL client over plaintext gRPC to addr.
func NewFlightClient(addr string) (*fsql.Client, error) {
	return fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// DialFlight is NewFlightClient for a test: a failure fails t, and the client is closed when t
// ends.
func DialFlight(t testing.TB, addr string) *fsql.Client {
	t.Helper()
	c, err := NewFlightClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// FlightRows runs q through c (Execute, then DoGet of the first endpoint's ticket) and converts
// every cell with cell.
func FlightRows[T any](ctx context.Context, c *fsql.Client, q string, cell func(col arrow.Array, row int) T) ([][]T, error) {
	info, err := c.Execute(ctx, q)
	if err != nil {
		return nil, err
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out [][]T
	for r.Next() {
		b := r.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			row := make([]T, b.NumCols())
			for c := range row {
				row[c] = cell(b.Column(c), i)
			}
			out = append(out, row)
		}
	}
	return out, r.Err()
}

// ValueStr is a FlightRows cell: Arrow's own text of the value.
func ValueStr(col arrow.Array, row int) string { return col.ValueStr(row) }
