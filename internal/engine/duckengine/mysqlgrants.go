package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// SHOW GRANTS on DuckDB, as MariaDB answers a client what it may do (DBeaver's, MySQL
// Workbench's and Metabase's privilege checks ask it; DuckDB answered 1235): the proxy's
// account may do anything on the embedded database, from any host, so its one grant is
// `GRANT ALL PRIVILEGES ON *.* TO `user`@`%` WITH GRANT OPTION`, in MariaDB's column
// `Grants for user@%`. SHOW GRANTS, FOR CURRENT_USER [()], and FOR the client's own user
// (@'%' or no host) are answered so; any other account is MariaDB's 1141, as for an account
// it does not have. No password or other secret is shown.

// mysqlShowGrants is the SELECT answering a MySQL client's SHOW GRANTS (sqlText) for the user
// of q; ok false when sqlText is no SHOW GRANTS.
func mysqlShowGrants(q *query.Request, sqlText string) (out string, ok bool, err error) {
	if !sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "show") || !containsFold(sqlText, "grants") {
		return "", false, nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 2 || !toks[0].IsWord("show") || !toks[1].IsWord("grants") {
		return "", false, nil
	}
	user, host := q.User, "%"
	rest := toks[2:]
	switch {
	case len(rest) == 0:
	case rest[0].IsWord("for") && len(rest) >= 2 && rest[1].IsWord("current_user") &&
		(len(rest) == 2 || len(rest) == 4 && rest[2].Text == "(" && rest[3].Text == ")"):
	case rest[0].IsWord("for") && len(rest) == 2 && rest[1].Kind == sqltok.String &&
		strings.HasPrefix(sqltok.MySQLStringValue(rest[1].Text), q.User+"@"):
		// CURRENT_USER as the MySQL frontend writes it in: 'user@host'
	case rest[0].IsWord("for") && len(rest) >= 2:
		u, h, ok := grantAccount(rest[1:])
		if !ok {
			return "", false, nil // not read here: mysqlshow refuses it
		}
		if u != q.User || h != "%" {
			return "", true, &query.Error{Code: sqlstate.SyntaxErrorOrAccessRuleViolation,
				Message: "There is no such grant defined for user '" + u + "' on host '" + h + "' (MySQL error 1141)"}
		}
	default:
		return "", false, nil
	}
	account := "`" + strings.ReplaceAll(user, "`", "``") + "`@`" + host + "`"
	return "SELECT " + duckString("GRANT ALL PRIVILEGES ON *.* TO "+account+" WITH GRANT OPTION") +
		" AS " + quoteIdent("Grants for "+user+"@"+host), true, nil
}

// grantAccount reads an account: user, 'user', `user` or "user", then @ and a host written
// the same ways (none: '%'), all of toks.
func grantAccount(toks []sqltok.Token) (user, host string, ok bool) {
	part := func(t sqltok.Token) (string, bool) {
		switch {
		case t.Kind == sqltok.Word:
			return t.Text, true
		case t.Kind == sqltok.QuotedIdent && !t.Unterminated:
			return identText(t), true
		case t.Kind == sqltok.String && !t.Unterminated:
			return sqltok.MySQLStringValue(t.Text), true
		}
		return "", false
	}
	if len(toks) == 0 {
		return "", "", false
	}
	if user, ok = part(toks[0]); !ok {
		return "", "", false
	}
	switch {
	case len(toks) == 1:
		return user, "%", true
	case len(toks) == 3 && toks[1].Text == "@":
		host, ok = part(toks[2])
		return user, host, ok
	case len(toks) == 2 && strings.HasPrefix(toks[1].Text, "@") && len(toks[1].Text) > 1:
		return user, strings.TrimPrefix(toks[1].Text, "@"), true // user@host read as one operand
	}
	return "", "", false
}
