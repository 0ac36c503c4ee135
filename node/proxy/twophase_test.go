package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"pgregory.net/rapid"
)

var protocolsAll = []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL}

// TestTwoPhaseRefused: every two-phase commit statement (MySQL/MariaDB XA, PostgreSQL's PREPARE
// TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED) is refused with 0A000 (ER_NOT_SUPPORTED_YET
// on the MySQL wire) in every protocol, also in an executable comment, after another statement
// and in text an engine runs; transaction control and statements that only hold the words pass.
func TestTwoPhaseRefused(t *testing.T) {
	refused := []string{
		"XA START 'g1'", "xa begin 'g1'", "XA END 'g1'", "XA PREPARE 'g1'", "XA COMMIT 'g1'", "xa commit 'g1' one phase",
		"XA ROLLBACK 'g1'", "XA RECOVER", "xa recover convert xid", "  /* c */ Xa\n\tRecover ;", "XA START X'6731', 'b', 1",
		"PREPARE TRANSACTION 'g1'", "prepare transaction 'g1';", "COMMIT PREPARED 'g1'", "rollback prepared 'g1'",
		"select 1; XA RECOVER", "begin; insert into t values (1); prepare transaction 'x'",
		"/*!XA RECOVER*/", "/*M!100000 xa rollback 'g1' */", "EXECUTE IMMEDIATE 'XA RECOVER'",
		"PREPARE s FROM 'XA ROLLBACK ''g1'''", "PREPARE s FROM X'5841205245434f564552'", "EXECUTE IMMEDIATE 'X\\A RECOVER'",
		"do $$ begin execute 'commit prepared ''g1'''; end $$",
		"EXECUTE IMMEDIATE 'select $a$ ; XA RECOVER ; $a$'", // MySQL's reading of the text only
	}
	allowed := []string{
		"BEGIN", "START TRANSACTION", "COMMIT", "ROLLBACK", "SAVEPOINT a", "ROLLBACK TO SAVEPOINT a", "RELEASE SAVEPOINT a",
		"commit work", "rollback and chain", "END", "select 'XA RECOVER'", "insert into t values ('xa start ''x''')",
		"select xa from t", "select * from xa", "select `xa`.recover from `xa`", `select "xa" from "prepare"`,
		"PREPARE transaction AS select 1", "prepare transaction (int) as select $1", "PREPARE transaction FROM 'select 1'",
		"PREPARE s FROM 'select 1'", "EXECUTE transaction", "select * from pg_prepared_xacts where gid = 'prepare transaction'",
		"update t set note = 'commit prepared' where id = 1", "select max(x), exact from example",
	}
	for _, protocol := range protocolsAll {
		for _, sql := range refused {
			err := checkTwoPhase(&query.Request{SQL: sql, Protocol: protocol})
			var qe *query.Error
			if !errors.As(err, &qe) || qe.Code != sqlstate.FeatureNotSupported || !strings.Contains(qe.Message, "doesn't yet support") {
				t.Errorf("%s: %q: got %v, want a 0A000 refusal", protocol, sql, err)
			}
		}
		for _, sql := range allowed {
			if err := checkTwoPhase(&query.Request{SQL: sql, Protocol: protocol}); err != nil {
				t.Errorf("%s: %q refused: %v", protocol, sql, err)
			}
		}
	}
}

// TestTwoPhaseCheckedForEveryGroup: checkStatements, which every query and every prepare of
// every frontend passes (passthrough too), refuses two-phase statements in a group that checks
// nothing else.
func TestTwoPhaseCheckedForEveryGroup(t *testing.T) {
	g := &group{name: "g"}
	if err := checkStatements(g, &query.Request{SQL: "XA RECOVER", Protocol: query.ProtocolMySQL}); err == nil {
		t.Fatal("XA RECOVER passed checkStatements")
	}
	if err := checkStatements(g, &query.Request{SQL: "commit", Protocol: query.ProtocolPostgres}); err != nil {
		t.Fatalf("COMMIT refused: %v", err)
	}
}

// TestTwoPhaseOnlyStatementsProperty: SQL that holds XA, PREPARE, TRANSACTION, PREPARED in
// strings, quoted names, comments, column and table names is never refused; the same text
// with a two-phase statement appended always is.
func TestTwoPhaseOnlyStatementsProperty(t *testing.T) {
	words := []string{"xa", "XA", "prepare", "transaction", "prepared", "recover", "start", "commit", "rollback", "Xa"}
	rapid.Check(t, func(t *rapid.T) {
		w := func(label string) string { return rapid.SampledFrom(words).Draw(t, label) }
		phrase := w("a") + " " + w("b")
		forms := []string{
			"select '" + phrase + "'",
			"select `" + w("c") + "` from `" + phrase + "`",
			`select "` + phrase + `" from t`,
			"select 1 /* " + phrase + " */",
			"select " + w("c") + "_col, " + w("d") + "x from " + w("e") + "_t",
			"insert into t (" + w("c") + "1) values ('" + phrase + "')",
			"update t set c = '" + phrase + "' where " + w("c") + "1 = 2",
			"select x from t where note like '%" + phrase + "%' -- " + phrase,
		}
		sql := rapid.SampledFrom(forms).Draw(t, "sql")
		protocol := rapid.SampledFrom(protocolsAll).Draw(t, "protocol")
		if err := checkTwoPhase(&query.Request{SQL: sql, Protocol: protocol}); err != nil {
			t.Fatalf("%s: %q refused: %v", protocol, sql, err)
		}
		twoPhase := rapid.SampledFrom([]string{"XA RECOVER", "xa start 'g'", "PREPARE TRANSACTION 'g'", "commit prepared 'g'", "ROLLBACK PREPARED 'g'"}).Draw(t, "2pc")
		if err := checkTwoPhase(&query.Request{SQL: sql + "\n;" + twoPhase, Protocol: protocol}); err == nil {
			t.Fatalf("%s: %q passed", protocol, sql+"\n;"+twoPhase)
		}
	})
}
