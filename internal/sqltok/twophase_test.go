package sqltok

import "testing"

func TestTwoPhaseKind(t *testing.T) {
	cases := map[string]Kind{
		"XA START 'g'": KindTwoPhase, "xa recover": KindTwoPhase, "XA COMMIT 'g' ONE PHASE": KindTwoPhase,
		"PREPARE TRANSACTION 'g'": KindTwoPhase, "COMMIT PREPARED 'g'": KindTwoPhase, "rollback prepared 'g'": KindTwoPhase,
		"commit": KindTransaction, "rollback to savepoint a": KindTransaction, "start transaction": KindTransaction,
		"prepare transaction as select 1": KindOther, "select 'xa recover'": KindSelect, "select xa from xa": KindSelect,
	}
	for sql, want := range cases {
		if got := StatementKind(sql); got != want {
			t.Errorf("StatementKind(%q) = %v, want %v", sql, got, want)
		}
	}
}
