// Command leftovers fails when a tagged test run (QUERYFLUX_TEST_RUN, set by make test) left a
// database behind on the test PostgreSQL or MariaDB server, names each one, and drops it so the
// next run starts clean. It touches only those two servers.
//
// determinism: outside the simulator (a command run by make test against the real servers)
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

func main() {
	tag := pgtest.RunTag()
	if tag == "" {
		fmt.Fprintf(os.Stderr, "leftovers: %s is not set: nothing tells this run's databases apart\n", pgtest.RunTagEnv)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, err := postgres(ctx, tag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "leftovers: PostgreSQL: %v\n", err)
		os.Exit(2)
	}
	mleft, err := mariadb(ctx, tag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "leftovers: MariaDB: %v\n", err)
		os.Exit(2)
	}
	left = append(left, mleft...)
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leftovers: the test run left %d database(s) behind (now dropped):\n  %s\n", len(left), strings.Join(left, "\n  "))
		os.Exit(1)
	}
	fmt.Println("leftovers: the test run left no database behind")
}

// ours matches a database this run created: qf_test_<tag>..., qf_chaos_<tag>...
func ours(name, tag string) bool {
	return strings.HasPrefix(name, "qf_test_"+tag) || strings.HasPrefix(name, "qf_chaos_"+tag)
}

func postgres(ctx context.Context, tag string) ([]string, error) {
	c, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "select datname from pg_database where datname like 'qf\\_%'")
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var left []string
	for _, n := range names {
		if ours(n, tag) {
			left = append(left, "postgres: "+n)
			if err := pgtest.Drop(n); err != nil {
				fmt.Fprintf(os.Stderr, "leftovers: %v\n", err)
			}
		}
	}
	return left, nil
}

func mariadb(ctx context.Context, tag string) ([]string, error) {
	cfg, err := mysql.ParseDSN(mytest.ServerDSN())
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "show databases like 'qf\\_%'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var left []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		if ours(n, tag) {
			left = append(left, "mariadb: "+n)
			if _, err := db.ExecContext(ctx, "drop database if exists "+n); err != nil {
				fmt.Fprintf(os.Stderr, "leftovers: drop %s: %v\n", n, err)
			}
		}
	}
	return left, rows.Err()
}
