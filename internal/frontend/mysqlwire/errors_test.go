package mysqlwire

import (
	"context"
	"errors"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

func TestProxyErrorsMapToMySQL(t *testing.T) {
	cases := []struct {
		err   error
		code  uint16
		state string
	}{
		{query.ErrNotConfigured, 1053, "08S01"},
		{&query.Error{Code: query.CodeQueueFull, Message: "queue full"}, 1040, "08004"},
		{&query.Error{Code: query.CodeCapacityTimeout, Message: "no capacity"}, 1637, "HY000"}, // not 1317: no client cancelled
		{&query.Error{Code: query.CodeQueryTimeout, TimedOut: true, Message: "group timeout"}, 3024, "HY000"},
		{&query.Error{Code: query.CodeQueryTimeout, Message: "canceling statement due to user request"}, 1317, "70100"},
		{query.EngineUnavailable("c", errors.New("dial tcp 10.1.2.3:3306")), 1429, "HY000"},
		{query.CoordinationUnavailable(errors.New("http://cp:9000/worker/capacity")), 3032, "HY000"},
		{&query.Error{Code: query.CodeAccessDenied, Message: "denied"}, 1227, "42000"},
		{&query.Error{Code: query.CodeNoRoute, Message: "no route"}, 1049, "42000"},
		{&query.Error{Code: query.CodeSyntax, Message: "syntax"}, 1064, "42000"},
		{&query.Error{Code: query.CodeEngine, Message: "boom"}, 1105, "HY000"},
		{&query.Error{Code: "42P01", Message: "relation does not exist"}, 1146, "42S02"}, // PostgreSQL and DuckDB state MySQL's way
		{&query.Error{Code: "23505", Message: "duplicate key"}, 1062, "23000"},
		{&query.Error{Code: "23000", Message: "NOT NULL constraint failed: t.x"}, 1048, "23000"},
		{&query.Error{Code: "22012", Message: "division by zero"}, 1365, "22012"},
		{&query.Error{Code: "25006", Message: "attached in read-only mode"}, 1792, "25006"},
		{&query.Error{Code: "XX999", Message: "unknown"}, 1105, "HY000"},
		{&query.Error{Code: "42S02", Message: "Table 'x' doesn't exist (MySQL error 1146)"}, 1146, "42S02"},
		{context.Canceled, 1317, "70100"},
		{errors.New("plain"), 1105, "HY000"},
	}
	for _, c := range cases {
		me := toMySQLError(c.err)
		if me.Code != c.code || me.State != c.state {
			t.Errorf("%v → %d (%s), want %d (%s)", c.err, me.Code, me.State, c.code, c.state)
		}
	}
	if me := toMySQLError(&query.Error{Code: "42S02", Message: "Table 'x' doesn't exist (MySQL error 1146)"}); me.Message != "Table 'x' doesn't exist" {
		t.Errorf("engine suffix kept: %q", me.Message)
	}
}
