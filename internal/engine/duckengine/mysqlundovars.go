package duckengine

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// User variables in a transaction's kept statements (mysqlstmtundo.go). MariaDB's user
// variables are not transactional, and neither are DuckDB's (SET VARIABLE): a ROLLBACK keeps
// their newest values. So a kept write that reads one (`INSERT ... VALUES (@x)`, `UPDATE ...
// SET n = @x := n + 1`) would, run again, read the value the variable has at the undo, not the
// one it had when it ran. Before such a write runs, the values of the variables it names are
// copied aside (DuckDB variables qf_uvs_<k>_<name>, within DuckDB: their types kept, nothing
// read back); run again, it gets them back first; after the run the variables get the values
// they had before the undo, as MariaDB's keep theirs (the refused statement's own assignments
// included).

// varSnapshot is the copy of the user variables a kept statement names, taken before it ran.
type varSnapshot struct {
	id    int      // the copies' number (qf_uvs_<id>_<name>)
	names []string // the variables, lower case
}

// userVarNames are the user variables (lower case, each once) a MySQL client's statement names.
func userVarNames(sqlText string) []string {
	if !mayNameVariable(sqlText) {
		return nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	var names []string
	for i, t := range toks {
		if t.Kind != sqltok.Operator || !strings.HasSuffix(t.Text, "@") || strings.HasSuffix(t.Text, "@@") {
			continue
		}
		if _, end := variableAt(toks, i); end >= 0 {
			if name, ok := userVarName(toks[end]); ok && !slices.Contains(names, strings.ToLower(name)) {
				names = append(names, strings.ToLower(name))
			}
		}
	}
	return names
}

// userVarCopy is the DuckDB statement setting variable to user variable name's value, or the
// reverse (back).
func userVarCopy(copyName, name string, back bool) string {
	if back {
		return "SET VARIABLE " + quoteIdent("qf_uv_"+name) + " = getvariable(" + sqltok.StandardString(copyName) + ")"
	}
	return "SET VARIABLE " + quoteIdent(copyName) + " = " + userVarRef(name)
}

// snapshotVars copies aside the user variables sqlText names (nil when it names none); ok is
// false when a copy failed (the statement then cannot be kept).
func (s *session) snapshotVars(ctx context.Context, sqlText string) (snap *varSnapshot, ok bool) {
	names := userVarNames(sqlText)
	if len(names) == 0 {
		return nil, true
	}
	s.undo.snaps++
	snap = &varSnapshot{id: s.undo.snaps, names: names}
	for _, n := range names {
		if s.exec(ctx, userVarCopy(snap.copyName(n), n, false)) != nil {
			return nil, false
		}
	}
	return snap, true
}

func (v *varSnapshot) copyName(name string) string {
	return "qf_uvs_" + strconv.Itoa(v.id) + "_" + name
}

// restore gives the variables the values they had before the statement first ran.
func (v *varSnapshot) restore(s *session, ctx context.Context) error {
	for _, n := range v.names {
		if err := s.exec(ctx, userVarCopy(v.copyName(n), n, true)); err != nil {
			return err
		}
	}
	return nil
}

// keptVarNames are the user variables the kept statements name.
func (l *stmtLog) keptVarNames() []string {
	var names []string
	for _, k := range l.stmts {
		if k.vars != nil {
			for _, n := range k.vars.names {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// holdVars copies aside the current values of the variables names (qf_uvn_<name>) and returns
// what gives them back.
func (s *session) holdVars(ctx context.Context, names []string) (back func()) {
	for _, n := range names {
		_ = s.exec(ctx, userVarCopy("qf_uvn_"+n, n, false))
	}
	return func() {
		for _, n := range names {
			_ = s.exec(ctx, userVarCopy("qf_uvn_"+n, n, true))
		}
	}
}
