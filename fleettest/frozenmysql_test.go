package fleettest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// TestMySQLClientOfAFrozenWorkerSeesItsLeaseLost: TestClientOfAFrozenWorkerSeesItsLeaseLost with
// go-sql-driver clients on the workers' MySQL frontend: when the frozen worker resumes, each of
// its clients gets the lost lease as MySQL's retryable deadlock (1213, SQLSTATE 40001, as a
// Galera cluster answers its own aborts) or its result, on a connection still open: never a
// dropped connection (driver.ErrBadConn, "invalid connection") nor a hang.
func TestMySQLClientOfAFrozenWorkerSeesItsLeaseLost(t *testing.T) {
	frozenWorkerClients(t, mysqlClient)
}

// mysqlClient is go-sql-driver on the MySQL frontend.
var mysqlClient = frozenClient{
	frontends: []string{"mysql"},
	run: func(ctx context.Context, ef *engineFleet, worker, stmt string) error {
		db, err := sql.Open("mysql", "queryflux@tcp("+ef.frontends["mysql"][worker]+")/?timeout=5s")
		if err != nil {
			return err
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		defer conn.Close()
		_, err = conn.ExecContext(ctx, stmt)
		if err == nil {
			return nil
		}
		// The connection serves on after the error, as MariaDB's after a deadlock.
		if pingErr := conn.PingContext(ctx); pingErr != nil {
			return fmt.Errorf("%v, and the connection then: %v", err, pingErr) // not the lost lease: a dropped connection
		}
		return err
	},
	leaseLost: func(err error) (string, bool) {
		var me *gomysql.MySQLError
		if errors.As(err, &me) && me.Number == 1213 && string(me.SQLState[:]) == "40001" {
			return me.Message, true
		}
		return "", false
	},
}
