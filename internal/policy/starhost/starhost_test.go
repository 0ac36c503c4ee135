package starhost

import (
	"errors"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/queryflux/queryflux/internal/query"
)

func TestHostHasNoIOAndStopsLoops(t *testing.T) {
	if _, err := Compile("l", "load('x.star', 'y')\ndef f():\n    pass\n", "f", 0, 0); err == nil || !strings.Contains(err.Error(), "load() is not allowed") {
		t.Fatalf("load: %v", err)
	}
	p, err := Compile("p", "def f(q):\n    print('secret', q['sql'])\n    return q['user']\n", "f", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Call(RequestValue(&query.Request{User: "u", SQL: "select 1"}))
	if err != nil || v != starlark.String("u") {
		t.Fatalf("got %v %v", v, err)
	}
	m, err := Compile("m", "def f(q):\n    q['sql'] = 'drop'\n", "f", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(RequestValue(&query.Request{})); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Fatalf("a script changed the request: %v", err)
	}
	spin, err := Compile("spin", "def f():\n    while True:\n        pass\n", "f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spin.CallLimited(1000, starlark.None); !errors.Is(err, ErrStepLimit) || !strings.Contains(err.Error(), "script spin") {
		t.Fatalf("want a step-limit error naming the script, got %v", err)
	}
	if _, err := Compile("a", "def f(a, b, c):\n    pass\n", "f", 1, 2); err == nil || !strings.Contains(err.Error(), "1 to 2 parameters") {
		t.Fatalf("arity: %v", err)
	}
}
