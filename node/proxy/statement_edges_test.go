package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// Guardrail answers beyond TestReadOnlyAndBlockedStatements: a blockedStatements entry as long
// as the statement's leading words, a group with no guardrails (executable comments pass), and
// the refusal naming what makes a SELECT write.
func TestStatementGuardrailEdges(t *testing.T) {
	cases := []struct {
		sql      string
		readOnly bool
		blocked  []string
		refusal  string // "" when the statement runs
	}{
		{"create or replace view v as select 1", false, []string{"create or replace"}, `"create or replace" statements are blocked`},
		{"select /*!40001 SQL_NO_CACHE */ 1", false, nil, ""},
		{"select * into t2 from t", true, nil, "SELECT with INTO is not allowed"},
		{"select * from t for update", true, nil, "SELECT with UPDATE is not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			h := newHarness(t)
			spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 1}))
			spec.Groups[0].ReadOnly, spec.Groups[0].BlockedStatements = tc.readOnly, tc.blocked
			h.activate(spec)
			eng := spec.Clusters[0].Engine.(*fakeEngine)
			_, err := h.run(t.Context(), sel(tc.sql))
			if tc.refusal == "" {
				if err != nil || eng.executes.Load() != 1 {
					t.Fatalf("refused or not run (executes %d): %v", eng.executes.Load(), err)
				}
				return
			}
			var qe *query.Error
			if !errors.As(err, &qe) || qe.Code != query.CodeAccessDenied || !strings.Contains(qe.Message, tc.refusal) {
				t.Fatalf("err %v, want an access-denied refusal saying %q", err, tc.refusal)
			}
			if eng.executes.Load() != 0 {
				t.Fatal("a refused statement reached the engine")
			}
		})
	}
}
