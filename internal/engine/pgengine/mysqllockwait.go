package pgengine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's innodb_lock_wait_timeout on PostgreSQL. Applications and ORMs set it to bound
// a row lock wait (Django's and Laravel's init commands, job queues' SELECT ... FOR UPDATE);
// the frontend sends the SET to the engine on the connection it holds for the client, where
// PostgreSQL refused it (1105 unrecognized configuration parameter) and a lock wait had no
// bound. It is PostgreSQL's lock_timeout now, set for the session (0 is MariaDB's "do not
// wait": 1 ms), kept with the connection for @@innodb_lock_wait_timeout, and reset when the
// session gives the connection back. A wait past it is MariaDB's 1205 "Lock wait timeout
// exceeded; try restarting transaction" (mysqlerrors.go), which undoes the statement only,
// as InnoDB does (the frontend's statement savepoint); a deadlock (1213) ends the transaction.

// lockWaitKey is where a connection keeps its client's innodb_lock_wait_timeout in seconds
// (pgconn's CustomData); absent for MariaDB's default.
const lockWaitKey = "queryflux.innodb_lock_wait_timeout"

const (
	lockWaitDefault = 50        // MariaDB's innodb_lock_wait_timeout
	lockWaitMax     = 100000000 // MariaDB's largest; a larger value is clamped, as MariaDB does
)

// mysqlLockWaitSet is the value tokens of a SET of the session's innodb_lock_wait_timeout, its
// only item, in sqlText (PostgreSQL's text of it), whether it sets the global one, and ok.
func mysqlLockWaitSet(sqlText string) (value []sqltok.Token, global, ok bool) {
	if !sqltok.ContainsFold(sqlText, "innodb_lock_wait_timeout") {
		return nil, false, false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if len(toks) < 4 || !toks[0].IsWord("set") {
		return nil, false, false
	}
	item := toks[1:]
	i := 0
	if item[0].IsWord("session", "local", "global") {
		global, i = item[0].IsWord("global"), 1
	} else if item[0].Kind == sqltok.Operator && item[0].Text == "@@" {
		i = 1
		if len(item) > 2 && item[2].Text == "." && item[1].IsWord("session", "local", "global") {
			global, i = item[1].IsWord("global"), 3
		}
	}
	if i+2 >= len(item) || !item[i].IsWord("innodb_lock_wait_timeout") || item[i+1].Kind != sqltok.Operator ||
		item[i+1].Text != "=" && item[i+1].Text != ":=" {
		return nil, false, false
	}
	return item[i+2:], global, true
}

// setLockWait runs a SET of innodb_lock_wait_timeout (value: its tokens; args the statement's
// parameters) on db, a connection held for the session.
func setLockWait(ctx context.Context, db querier, value []sqltok.Token, global bool, args []any) (query.Rows, error) {
	if global {
		return nil, &query.Error{Code: "HY000", Message: "SET GLOBAL innodb_lock_wait_timeout is not supported by queryflux on PostgreSQL: " +
			"set the session's (MySQL error 1235)"}
	}
	c, ok := db.(interface{ Conn() *pgx.Conn })
	if !ok { // a connection of the pool's: it would bound another client's waits
		return nil, &query.Error{Code: "HY000", Message: "SET innodb_lock_wait_timeout needs a connection held for the session (MySQL error 1235)"}
	}
	n, ok := lockWaitValue(value, args)
	if !ok {
		return nil, &query.Error{Code: "42000", Message: "Incorrect argument type to variable 'innodb_lock_wait_timeout' (MySQL error 1232)"}
	}
	n = max(0, min(n, lockWaitMax))
	ms := "1ms" // MariaDB's 0: no wait; PostgreSQL's 0 would be no bound
	if n > 0 {
		ms = strconv.FormatInt(min(n*1000, 1<<31-1), 10) + "ms"
	}
	rows, err := db.Query(ctx, "SELECT set_config('lock_timeout', $1, false)", pgx.QueryExecModeExec, ms)
	if err != nil {
		return nil, err
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	c.Conn().PgConn().CustomData()[lockWaitKey] = n
	return engine.TagRows("SET"), nil
}

// lockWaitValue is the whole number of seconds value (a SET's value tokens) gives: a number, a
// parameter bound to one, or DEFAULT.
func lockWaitValue(value []sqltok.Token, args []any) (int64, bool) {
	if len(value) == 2 && value[0].Text == "-" && value[1].Kind == sqltok.Number {
		return 0, true // below MariaDB's least, clamped to it
	}
	if len(value) != 1 {
		return 0, false
	}
	switch t := value[0]; {
	case t.IsWord("default"):
		return lockWaitDefault, true
	case t.Kind == sqltok.Number:
		n, err := strconv.ParseInt(t.Text, 10, 64)
		return n, err == nil
	case numberParam(t, args):
		i, _ := strconv.Atoi(t.Text[1:])
		if n, err := strconv.ParseInt(fmt.Sprint(args[i-1]), 10, 64); err == nil {
			return n, true
		}
		return lockWaitMax, true // an unsigned number past int64's
	}
	return 0, false
}

// withLockWaitReads is sqlText with each @@innodb_lock_wait_timeout the value db's client set,
// MariaDB's default when none (and for @@global.).
func withLockWaitReads(sqlText string, db querier) string {
	n := int64(lockWaitDefault)
	if c, ok := db.(interface{ Conn() *pgx.Conn }); ok {
		if v, ok := c.Conn().PgConn().CustomData()[lockWaitKey].(int64); ok {
			n = v
		}
	}
	return withVariableReads(sqlText, "innodb_lock_wait_timeout", strconv.FormatInt(n, 10), strconv.Itoa(lockWaitDefault))
}

// resetLockWait sets pc's lock_timeout back when its client set innodb_lock_wait_timeout, before
// the connection goes back to the pool.
func resetLockWait(pc *pgconn.PgConn) {
	if _, ok := pc.CustomData()[lockWaitKey]; !ok {
		return
	}
	delete(pc.CustomData(), lockWaitKey)
	if !pc.IsClosed() && pc.TxStatus() == 'I' {
		_ = pc.Exec(context.Background(), "RESET lock_timeout").Close() //determinism:ok a session's end has no context of its own
	}
}
