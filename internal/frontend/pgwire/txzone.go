package pgwire

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The session's TimeZone inside a transaction, as PostgreSQL keeps it: SET LOCAL TIME ZONE
// lasts until the transaction ends, a plain SET is undone by a ROLLBACK (and by a ROLLBACK TO
// a savepoint taken before it), and a COMMIT keeps the last plain SET. The zone is this
// frontend's (the engine's connection never takes it: rows are written here), so the
// frontend follows the transaction's statements itself. As in PostgreSQL 14 and later, the
// client is told the zone (ParameterStatus) before ReadyForQuery, when it is not the one it
// was last told: after a SET LOCAL, and again when the transaction ends.

// zoneTx is what an open transaction changed of the TimeZone.
type zoneTx struct {
	start   string     // the zone when the transaction's first change came (its zone at BEGIN)
	session string     // the zone a COMMIT keeps: the last plain SET's, else start
	saves   []zoneSave // savepoints taken since the first change, oldest first
	commits bool       // a COMMIT of the transaction (not failed) ran
}

// zoneSave is the zone, and the one a COMMIT would keep, when a savepoint was taken.
type zoneSave struct{ name, zone, session string }

// inTx reports whether an explicit transaction is open, and whether it failed.
func (c *conn) inTx() (open, failed bool) {
	if c.session == nil {
		return false, false
	}
	switch c.session.TxStatus() {
	case 'T':
		return true, false
	case 'E':
		return true, true
	}
	return false, false
}

// errTxAborted is PostgreSQL's answer to any statement but the transaction's end in a failed
// transaction.
var errTxAborted = &query.Error{Code: sqlstate.InFailedSQLTransaction, Message: "current transaction is aborted, commands ignored until end of transaction block"}

// setZone makes zone the session's TimeZone: for the rest of the transaction when local, else
// past it (a ROLLBACK undoes it). Outside a transaction a SET LOCAL changes nothing.
func (c *conn) setZone(zone string, local bool) {
	open, _ := c.inTx()
	if !open {
		if !local {
			c.timeZone = zone
		}
		return
	}
	if c.zones == nil {
		c.zones = &zoneTx{start: c.timeZone, session: c.timeZone}
	}
	if !local {
		c.zones.session = zone
	}
	c.timeZone = zone
}

// warnSetLocal is PostgreSQL's warning for a SET LOCAL outside a transaction block, which
// changes nothing.
func (c *conn) warnSetLocal() {
	c.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: sqlstate.NoActiveSQLTransaction,
		Message: "SET LOCAL can only be used in transaction blocks"})
}

// zoneStatement follows a transaction statement the session's engine ran: sql succeeded
// (a failed one changes nothing here: the transaction failed with it), and committing says it
// was a COMMIT of a transaction that had not failed.
func (c *conn) zoneStatement(sql string, committing bool) {
	z := c.zones
	if z == nil {
		return
	}
	toks := significantTokens(sql)
	word := func(i int) string {
		if i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) {
			return strings.ToLower(toks[i].Text)
		}
		return ""
	}
	// name is the savepoint named from token i on, skipping the optional keywords.
	name := func(i int, skip ...string) string {
		for i < len(toks) && toks[i].Kind == sqltok.Word && slices.Contains(skip, strings.ToLower(toks[i].Text)) {
			i++
		}
		if i >= len(toks) {
			return ""
		}
		if t := toks[i]; t.Kind == sqltok.QuotedIdent {
			return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
		}
		return strings.ToLower(toks[i].Text)
	}
	switch word(0) {
	case "commit", "end":
		z.commits = committing
	case "savepoint":
		z.saves = append(z.saves, zoneSave{name: name(1), zone: c.timeZone, session: z.session})
	case "release":
		if i := z.saveNamed(name(1, "savepoint")); i >= 0 {
			z.saves = z.saves[:i]
		}
	case "rollback":
		to := 1
		for word(to) == "work" || word(to) == "transaction" {
			to++
		}
		if word(to) != "to" {
			return // the transaction's end: syncTxStatus
		}
		if i := z.saveNamed(name(to+1, "savepoint")); i >= 0 {
			c.timeZone, z.session = z.saves[i].zone, z.saves[i].session
			z.saves = z.saves[:i+1] // the savepoint stays; later ones go
		} else {
			// Taken before the transaction's first change: back to the zone it began with.
			c.timeZone, z.session, z.saves = z.start, z.start, z.saves[:0]
		}
	}
}

// saveNamed is the index of the latest savepoint named name, or -1.
func (z *zoneTx) saveNamed(name string) int {
	for i := len(z.saves) - 1; i >= 0; i-- {
		if z.saves[i].name == name {
			return i
		}
	}
	return -1
}

// endZones ends the transaction's TimeZone changes: a COMMIT keeps the last plain SET's zone,
// anything else (ROLLBACK, a failed transaction's COMMIT, a lost session) the zone it began
// with.
func (c *conn) endZones() {
	if z := c.zones; z != nil {
		c.timeZone = z.start
		if z.commits {
			c.timeZone = z.session
		}
		c.zones = nil
	}
}

// failZones undoes the TimeZone changes of the failed (sub)transaction, as PostgreSQL does when
// the error aborts it: those since the latest savepoint, which a ROLLBACK TO may then go back
// to, or all of the transaction's.
func (c *conn) failZones() {
	z := c.zones
	if z == nil {
		return
	}
	if n := len(z.saves); n > 0 {
		c.timeZone, z.session = z.saves[n-1].zone, z.saves[n-1].session
		return
	}
	c.timeZone, z.session = z.start, z.start
}

// reportZone tells the client the session's TimeZone when it is not the one it was last told
// (before ReadyForQuery, as PostgreSQL reports a changed setting).
func (c *conn) reportZone() {
	if c.timeZone != c.zoneSent {
		c.zoneSent = c.timeZone
		c.be.Send(&pgproto3.ParameterStatus{Name: "TimeZone", Value: c.timeZone})
	}
}
