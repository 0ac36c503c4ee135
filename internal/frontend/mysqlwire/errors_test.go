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
		{&query.Error{Code: query.CodeCapacityTimeout, Message: "no capacity"}, 1317, "70100"},
		{&query.Error{Code: query.CodeAccessDenied, Message: "denied"}, 1227, "42501"},
		{&query.Error{Code: query.CodeNoRoute, Message: "no route"}, 1049, "3D000"},
		{&query.Error{Code: query.CodeSyntax, Message: "syntax"}, 1064, "42601"},
		{&query.Error{Code: query.CodeEngine, Message: "boom"}, 1105, "HY000"},
		{&query.Error{Code: "42P01", Message: "relation does not exist"}, 1146, "42P01"},
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
