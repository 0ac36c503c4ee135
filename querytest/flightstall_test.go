package querytest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// The Flight SQL client process of the write stall tests: this test binary run again with
// flightReaderEnv set to "addr|pause|sql" runs TestFlightReaderProcess alone, which executes sql
// with arrow-go's client (gRPC's defaults: its stream window grows with the connection's
// bandwidth), reads the result taking each batch pause after the last, prints "batch N" after
// each (N rows so far) and "done N <error>" at the end.
const flightReaderEnv = "QF_FLIGHT_READER"

func TestFlightReaderProcess(t *testing.T) {
	spec := os.Getenv(flightReaderEnv)
	if spec == "" {
		t.Skip("the client process of the Flight SQL write stall tests")
	}
	parts := strings.SplitN(spec, "|", 3)
	pause, err := time.ParseDuration(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	c := frontendtest.DialFlight(t, parts[0])
	ctx := context.Background()
	info, err := c.Execute(ctx, parts[2])
	if err != nil {
		fmt.Printf("done 0 %v\n", err)
		return
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		fmt.Printf("done 0 %v\n", err)
		return
	}
	defer r.Release()
	rows := 0
	for r.Next() {
		rows += int(r.RecordBatch().NumRows())
		fmt.Printf("batch %d\n", rows)
		time.Sleep(pause)
	}
	fmt.Printf("done %d %v\n", rows, r.Err())
}

// flightReader starts the client process reading sql from the Flight SQL frontend at addr; its
// lines come on the channel, which closes when it exits. It is killed at the test's end.
func flightReader(t *testing.T, addr string, pause time.Duration, sql string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlightReaderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), flightReaderEnv+"="+addr+"|"+pause.String()+"|"+sql)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return cmd, lines
}

// nextLine is the reader's next line starting with prefix (others skipped), within limit.
func nextLine(t *testing.T, lines <-chan string, prefix string, limit time.Duration) string {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the client process exited before a %q line", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q line from the client process within %s", prefix, limit)
		}
	}
}

// flightStallSQL is a result of rows of 1 KB carrying marker as a column's name, on PostgreSQL
// and DuckDB alike.
func flightStallSQL(marker string, rows int) string {
	return fmt.Sprintf("SELECT g, repeat('x', 1000) AS %s FROM generate_series(1, %d) AS t(g)", marker, rows)
}

// TestAFlightSQLClientThatStopsReadingFreesItsSlot: with maxRunningQueries 1 and a write stall
// timeout of 2 s, a real arrow-go client process suspended (SIGSTOP) after the first batch of a
// 1 GB result, on PostgreSQL and on DuckDB: its stream is ended, its query gone from the engine,
// another client waiting for the slot gets it, and the end is counted. A client process taking a
// batch every 300 ms of a 30 MB result (about 10 s in all, five times the timeout) gets every
// row. Before: gRPC's flow control held the stream's Send at the client's window, no socket
// write ever waited, and the stopped client held its slot for as long as it stayed connected
// (the next client failed after the capacity wait, 30 s).
func TestAFlightSQLClientThatStopsReadingFreesItsSlot(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	for _, tc := range []struct{ name, clusters string }{
		{"postgres", pgCluster(t, dbURL, 1)},
		{"duckdb", `clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 1}
clusterGroups:
  - {name: main, members: [duck], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 30}
routingFallback: main
settings: {security: {trustLoopback: true}}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := daemontest.FreeAddrs(t, 2)
			flight, admin := addrs[0], addrs[1]
			cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    flightsql: {enabled: true, listen: "%s"}
  limits: {writeStallTimeoutSecs: 2}
`, admin, adminToken, flight)+tc.clusters)
			startDaemon(t, nil, []string{flight, admin}, "--config", cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()

			marker := "slowread_flight_" + tc.name
			stopped, lines := flightReader(t, flight, 0, flightStallSQL(marker, 1000000))
			nextLine(t, lines, "batch", time.Minute)
			if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rows, err := frontendtest.FlightRows(ctx, frontendtest.DialFlight(t, flight), "SELECT 42", frontendtest.ValueStr)
			if err != nil || fmt.Sprint(rows) != "[[42]]" {
				t.Fatalf("a client after the Flight SQL client stopped reading: %v %v", rows, err)
			}
			t.Logf("a client after the Flight SQL client stopped reading answered after %s", time.Since(start).Round(time.Millisecond))
			if tc.name == "postgres" {
				direct := connect(ctx, t, dbURL)
				daemontest.Eventually(t, 30*time.Second, "the stopped client's query gone from the engine", func() bool {
					var n int
					err := direct.QueryRow(ctx, "select count(*) from pg_stat_activity where query like '%'||$1||'%' and pid <> pg_backend_pid()", marker).Scan(&n)
					return err == nil && n == 0
				})
			}
			daemontest.Eventually(t, 10*time.Second, "the write stall counted", func() bool {
				return writeStallRefusals(t, admin, "flightsql") == "1"
			})

			const slowRows = 30000
			_, lines = flightReader(t, flight, 300*time.Millisecond, flightStallSQL("slow_flight", slowRows))
			if done := nextLine(t, lines, "done", 2*time.Minute); done != fmt.Sprintf("done %d <nil>", slowRows) {
				t.Fatalf("the slow reader: %s, want all %d rows", done, slowRows)
			}
			if n := writeStallRefusals(t, admin, "flightsql"); n != "1" {
				t.Errorf("write stalls counted after the slow reader: %s, want 1", n)
			}
		})
	}
}
