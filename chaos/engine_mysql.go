package chaos

// The MariaDB side of a workload: a cluster with `engine: mysql` is a fresh database on the local
// MariaDB server, its groups' arrivals are go-sql-driver clients on the workers' MySQL wire, and
// what the engine runs is sampled from information_schema.processlist.
//
// The statement is chosen so MariaDB does with a killed client's query what the simulator's
// mysql engine does (runs it to its end), without burning a core: a SLEEP longer than 5 s looks
// at its connection every 5 s and stops once the client is gone, a SLEEP shorter does not, so a
// query of d seconds is a sum of SLEEPs of at most mysqlSleepChunk each (measured in RESULTS.md).
// It stays one top-level statement, so the lease tag the worker puts in front of it is what
// SHOW PROCESSLIST shows, which the control plane's engine fence looks for (a stored routine
// would show its inner statement instead).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// mysqlSleepChunk is the longest single SLEEP of a statement: below the 5 s at which MariaDB's
// SLEEP looks at its connection, with room for a late timer on a loaded machine.
const mysqlSleepChunk = 4 * time.Second

// mysqlMarker is in every workload statement, so the sampler counts those and nothing else.
const mysqlMarker = "/* qf_chaos */"

// MySQL error numbers: the worker's capacity refusals (as its MySQL wire maps them) and
// MariaDB's "Subquery returns more than 1 row", the drawn engine failure, raised after the
// statement slept for its time.
const (
	erConCount            = 1040 // the group's queue is full
	erTooManyConcurrentTx = 1637 // no slot within the group's wait
	erLockDeadlock        = 1213 // a lost lease (and an engine's deadlock: the message tells)
	erSubqueryRows        = 1242
)

// mysqlServer is the MariaDB server the engines live on.
func mysqlServer() (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(mytest.ServerDSN())
	if err != nil {
		return nil, fmt.Errorf("chaos: QUERYFLUX_TEST_MYSQL: %w", err)
	}
	return cfg, nil
}

// quietDriver stops go-sql-driver from logging the connections a killed worker broke.
var quietDriver sync.Once

func openMySQL(dbName string) (*sql.DB, error) {
	cfg, err := mysqlServer()
	if err != nil {
		return nil, err
	}
	cfg.DBName = dbName
	return sql.Open("mysql", cfg.FormatDSN())
}

// newMySQLDatabase is a fresh empty MariaDB database for one cluster, dropped by drop.
func newMySQLDatabase(ctx context.Context) (*database, error) {
	quietDriver.Do(func() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) })
	db, err := openMySQL("")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	name := pgtest.NewName("qf_chaos_")
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("chaos: MariaDB: create database: %w", err)
	}
	return &database{name: name, mysql: true}, nil
}

func dropMySQLDatabase(name string) {
	db, err := openMySQL("")
	if err == nil {
		_, err = db.Exec("DROP DATABASE IF EXISTS " + name)
		db.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: drop MariaDB database %s: %v\n", name, err)
	}
}

// mysqlClusterYAML is a cluster entry of the fleet's configuration for a MariaDB engine.
func mysqlClusterYAML(name, dbName string, cap int) (string, error) {
	cfg, err := mysqlServer()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("  - {name: %s, engine: mysql, endpoint: %q, database: %s, credentials: {user: %q, password: %q}, maxRunningQueries: %d}\n",
		name, cfg.Addr, dbName, cfg.User, cfg.Passwd, cap), nil
}

// mysqlStatement runs each cluster's drawn time and outcome on the cluster it lands on (the
// engine database tells which).
func (f *fleetWorkload) mysqlStatement(draws []drawn) string {
	var cases []string
	for i, c := range f.wl.Clusters {
		if c.Engine == config.EngineMySQL {
			cases = append(cases, fmt.Sprintf("WHEN '%s' THEN %s", f.engines[c.Name], sleepFor(draws[i])))
		}
	}
	return fmt.Sprintf("SELECT %s CASE DATABASE() %s END", mysqlMarker, strings.Join(cases, " "))
}

// sleepFor is d as SLEEPs of at most mysqlSleepChunk, then, if drawn to fail, a subquery
// MariaDB refuses at run time.
func sleepFor(d drawn) string {
	var parts []string
	left := d.d
	for left > mysqlSleepChunk {
		parts = append(parts, fmt.Sprintf("SLEEP(%.3f)", mysqlSleepChunk.Seconds()))
		left -= mysqlSleepChunk
	}
	parts = append(parts, fmt.Sprintf("SLEEP(%.3f)", left.Seconds()))
	if d.fail {
		parts = append(parts, "(SELECT 1 UNION SELECT 2)")
	}
	return strings.Join(parts, " + ")
}

// runMySQL sends one query to a worker's MySQL wire as the group's user.
func (f *fleetWorkload) runMySQL(ctx context.Context, worker, group, stmt string, draws []drawn) (string, time.Duration, error) {
	db, err := sql.Open("mysql", fmt.Sprintf("%s@tcp(%s)/?timeout=5s", group, f.my[worker]))
	if err != nil {
		return outRefused, 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return outRefused, 0, err
	}
	defer conn.Close()
	var got sql.NullInt64
	err = conn.QueryRowContext(ctx, stmt).Scan(&got)
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return outSucceeded, maxDraw(draws), err
	case errors.As(err, &me) && leaseLost(me.Number == erLockDeadlock, me.Message):
		return outLeaseLost, 0, err
	case errors.As(err, &me) && me.Number == erTooManyConcurrentTx:
		return outTimedOut, 0, err
	case errors.As(err, &me) && me.Number == erConCount:
		return outQueueFull, 0, err
	case errors.As(err, &me) && me.Number == erSubqueryRows:
		return outFailed, maxDraw(draws), err
	case errors.As(err, &me):
		return outFailed, 0, err
	case ctx.Err() != nil:
		return outCancelled, 0, err
	}
	return outLost, 0, err // the connection broke while the query ran
}

// sampleMySQL counts the workload statements each MariaDB engine database runs, the queries of
// killed and frozen workers included, as long as MariaDB runs them.
type mysqlSampler struct {
	db   *sql.DB
	byDB map[string]string // engine database -> cluster
}

func newMySQLSampler(engines map[string]string, clusters []string) (*mysqlSampler, error) {
	db, err := openMySQL("")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	s := &mysqlSampler{db: db, byDB: map[string]string{}}
	for _, c := range clusters {
		s.byDB[engines[c]] = c
	}
	return s, nil
}

func (s *mysqlSampler) sample(ctx context.Context, counts map[string]int) error {
	rows, err := s.db.QueryContext(ctx, `SELECT db, COUNT(*) FROM information_schema.processlist
		WHERE id <> CONNECTION_ID() AND command = 'Query' AND info LIKE ? GROUP BY db`, "%"+mysqlMarker+"%")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var db sql.NullString
		var n int
		if err := rows.Scan(&db, &n); err != nil {
			return err
		}
		if c, ok := s.byDB[db.String]; ok {
			counts[c] = n
		}
	}
	return rows.Err()
}

func (s *mysqlSampler) close() { s.db.Close() }

// probeMySQL is the serving probe on a worker's MySQL wire.
func probeMySQL(ctx context.Context, addr, group string) bool {
	db, err := sql.Open("mysql", fmt.Sprintf("%s@tcp(%s)/?timeout=5s", group, addr))
	if err != nil {
		return false
	}
	defer db.Close()
	return db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)) == nil
}
