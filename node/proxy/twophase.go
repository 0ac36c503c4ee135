package proxy

import (
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Two-phase commit is refused through QueryFlux, whatever the client's protocol and the group's
// engine. A prepared two-phase transaction outlives the engine session that prepared it and is
// named by a gid global to the engine: MariaDB's XA RECOVER lists every session's, and any
// session of the engine user may XA COMMIT or XA ROLLBACK one; PostgreSQL's pg_prepared_xacts
// lists them and COMMIT PREPARED / ROLLBACK PREPARED finish any of them. Every client of a
// cluster reaches its engine as the same engine user, often over a pooled connection, so one
// client's prepared transaction would be every other client's to see and finish. The
// statements (sqltok.TwoPhase) are refused before any engine sees them, read as killers.go
// reads a statement: in every engine's reading, in MySQL executable comments, and in text an
// engine runs as SQL (PREPARE ... FROM, EXECUTE IMMEDIATE), escapes and hex decoded. A
// statement that merely holds the word (a string, a name) is not one.

// twoPhaseWords are what text must hold (in any case) for a reading of it to find a two-phase
// statement; "u&" may spell either. sharedNeedsOf finds them (needTwoPhase) in the one scan the
// shared engine user's checks make of a statement (statement.go's checkSharedEngineUserAs, which
// runs this check among those), and a text holding none of them, nor any other check's words,
// is remembered as plain: a client's next statement of its kind is not scanned again.
var twoPhaseWords = []string{"xa", "prepare", "u&"}

// checkTwoPhase refuses req when any of its statements is a two-phase commit statement. Run it
// on text that may hold one (needTwoPhase).
func checkTwoPhase(req *query.Request) error {
	a := req.Analysis()
	s := &killerScan{statement: sqltok.TwoPhase, deeper: twoPhaseWords}
	for _, r := range engineReadings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(req.SQL)
		}
		if what, _ := s.killerIn(toks, r, 0); what != "" {
			return &query.Error{Code: sqlstate.FeatureNotSupported, Message: "This version of QueryFlux doesn't yet support '" + what +
				"': two-phase (XA, PREPARE TRANSACTION) transactions are not supported, since a prepared one outlives its connection and every client of the engine user could see and finish it; use BEGIN and COMMIT"}
		}
	}
	return nil
}
