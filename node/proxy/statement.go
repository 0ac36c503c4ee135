package proxy

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// headWordsMax is how many leading words of a statement blockedStatements entries can name
// ("drop", "create table", "alter table add").
const headWordsMax = 3

// statement is one statement of a request, as guardrails and the cache see it.
type statement struct {
	kind sqltok.Kind
	head []string // leading keywords, lower-cased
	// selectWrites names what makes a SELECT write: a data-modifying WITH (DELETE ...), SELECT
	// INTO a table or file, FOR UPDATE; "" for a plain read.
	selectWrites string
}

// statementsOf classifies each statement of req, from its one analysis.
func statementsOf(req *query.Request) []statement {
	stmts := req.Analysis().Statements
	out := make([]statement, len(stmts))
	for i, s := range stmts {
		out[i].kind = s.Kind
		for _, t := range s.Significant {
			if len(out[i].head) == headWordsMax || t.Kind != sqltok.Word {
				break
			}
			out[i].head = append(out[i].head, strings.ToLower(t.Text))
		}
		if s.Kind == sqltok.KindSelect {
			out[i].selectWrites = selectWrites(s.Significant)
		}
	}
	return out
}

// selectWrites returns the word that makes a SELECT write, or "". Only "INTO @variable" (MySQL)
// is a read.
func selectWrites(toks []sqltok.Token) string {
	for i, t := range toks {
		if t.Kind != sqltok.Word {
			continue
		}
		switch w := strings.ToLower(t.Text); w {
		case "insert", "update", "delete", "merge":
			return w
		case "into":
			if i+1 == len(toks) || !strings.HasPrefix(toks[i+1].Text, "@") {
				return w
			}
		}
	}
	return ""
}

// executableComment reports whether sql holds a MySQL executable comment (/*! ... */, /*M! ... */):
// MySQL and MariaDB run its text, which every other reader (the tokenizer included) skips.
func executableComment(sql string) bool {
	return strings.Contains(sql, "/*!") || strings.Contains(sql, "/*M!")
}

// readOnlyAllows reports whether a read-only group may run st: reads, session settings and
// transaction control. EXPLAIN ANALYZE runs its statement, so only plain EXPLAIN passes.
// Anything unclassified (CALL, COPY, DO...) is refused.
func readOnlyAllows(st statement) bool {
	switch st.kind {
	case sqltok.KindSelect:
		return st.selectWrites == ""
	case sqltok.KindShow, sqltok.KindSet, sqltok.KindTransaction:
		return true
	case sqltok.KindExplain:
		return len(st.head) < 2 || st.head[1] != "analyze"
	}
	return false
}

// blockedBy returns the blockedStatements entry that st matches, or "". An entry matches the
// statement's leading words ("drop", "create table") or its kind ("ddl", "delete", "insert",
// "update", "set", "transaction"...), so "delete" also catches WITH ... DELETE.
func blockedBy(st statement, blocked []string) string {
	for _, b := range blocked {
		words := strings.Fields(b)
		if len(words) == 1 && words[0] == st.kind.String() && st.kind != sqltok.KindOther {
			return b
		}
		if len(words) <= len(st.head) && slicesEqual(words, st.head[:len(words)]) {
			return b
		}
	}
	return ""
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkStatements enforces a group's readOnly and blockedStatements on every statement of req.
// Every group refuses a statement that would end other clients' engine sessions (killers.go),
// narrows the engine's views of its sessions to the client's own (activity.go), and refuses
// what would reach the engine host's files and programs (serverfiles.go).
func checkStatements(g *group, req *query.Request) error {
	if err := checkSharedEngineUserAs(req, g.engineUsers); err != nil { // two-phase commit's refusal too (twophase.go)
		return err
	}
	if !g.readOnly && len(g.blocked) == 0 {
		return nil
	}
	if executableComment(req.SQL) { // whatever the frontend's dialect: the engine may be MySQL
		return &query.Error{Code: query.CodeAccessDenied,
			Message: fmt.Sprintf("cluster group %s checks statements: MySQL executable comments (/*! ... */) are not allowed", g.name)}
	}
	for _, st := range statementsOf(req) {
		if g.readOnly && st.selectWrites != "" {
			return &query.Error{Code: query.CodeAccessDenied,
				Message: fmt.Sprintf("cluster group %s is read-only: SELECT with %s is not allowed", g.name, strings.ToUpper(st.selectWrites))}
		}
		if g.readOnly && !readOnlyAllows(st) {
			return &query.Error{Code: query.CodeAccessDenied,
				Message: fmt.Sprintf("cluster group %s is read-only: %s statements are not allowed", g.name, st.kind)}
		}
		if b := blockedBy(st, g.blocked); b != "" {
			return &query.Error{Code: query.CodeAccessDenied,
				Message: fmt.Sprintf("%q statements are blocked in cluster group %s", b, g.name)}
		}
	}
	return nil
}

// checkSharedEngineUser runs the checks that keep one client of the shared engine user from
// reaching another's sessions or the engine host: killers.go, runtimesql.go, activity.go,
// serverfiles.go. One scan of the text (sharedNeedsOf) finds which of killers.go, activity.go
// and serverfiles.go it needs, runtimesql.go's own (mayRunTimeSQL) whether that one is needed;
// a text none needs is remembered
// (plainTexts), so a client sending a statement again, with other numbers in it (pgbench's
// simple protocol) or none (a prepared statement's text), pays one comparison instead of
// the scan.
func checkSharedEngineUser(req *query.Request) error { return checkSharedEngineUserAs(req, nil) }

// checkSharedEngineUserAs is checkSharedEngineUser for a group whose engines log in as users.
func checkSharedEngineUserAs(req *query.Request, users []string) error {
	schemaDB := req.Protocol == query.ProtocolMySQL && req.Database != "" &&
		isSystemSchema(req.Database)
	shape := req.Shape.Of(req.SQL)
	if !schemaDB && shape != nil && shape.Plain() {
		return nil
	}
	if !schemaDB && knownPlain(req.SQL) {
		if shape != nil {
			shape.SetPlain() // a remembered text's kin: rememberPlain would have taken it
		}
		return nil
	}
	needs := sharedNeedsOf(req.SQL) // one scan for three of the checks
	if schemaDB {
		needs |= needSessions
	}
	if mayRunTimeSQL(req.SQL) {
		needs |= needRunTimeSQL
	}
	if needs == 0 {
		if rememberPlain(req.SQL) && shape != nil {
			shape.SetPlain() // its kin are plain too: see plainTexts
		}
		return nil
	}
	return runSharedChecks(req, needs, users)
}

// runSharedChecks runs the checks of needs on req, sent as one of users.
func runSharedChecks(req *query.Request, needs sharedNeeds, users []string) error {
	if needs&needTwoPhase != 0 {
		if err := checkTwoPhase(req); err != nil { // twophase.go
			return err
		}
	}
	if needs&needKillers != 0 {
		if err := sessionKillersIn(req); err != nil {
			return err
		}
	}
	if needs&needRunTimeSQL != 0 {
		if err := runTimeSQLIn(req); err != nil { // runtimesql.go
			return err
		}
	}
	if needs&needSessions != 0 {
		sql := req.SQL
		if err := narrowSessions(req, sessionsDatabase(req)); err != nil {
			return err
		}
		if req.SQL != sql && mayTouchServerFiles(req.SQL) {
			needs |= needFiles // narrowed: the text the engine is sent is checked
		}
	}
	if needs&needFiles != 0 {
		if err := serverFilesIn(req); err != nil {
			return err
		}
	}
	if needs&needEngineUser != 0 {
		return engineUserIn(req, users) // engineuser.go
	}
	return nil
}

// plainTexts are texts that held nothing checkSharedEngineUser looks for. A text that is one
// of them but for its numbers holds nothing either: no word the checks look for has a digit,
// and a text whose digits could matter (a backslash, whose \1 may stand for a letter where
// \0 does not; a digit before an x, 0x being hex where 1x is not) is never remembered.
var (
	plainTexts [4]atomic.Pointer[string]
	plainNext  atomic.Uint32
	plainHit   atomic.Uint32 // the slot knownPlain last found a text in
)

func knownPlain(sql string) bool {
	at := plainHit.Load() // the slot the last text found: a client's next text is most often its kin
	for k := range uint32(len(plainTexts)) {
		i := (at + k) % uint32(len(plainTexts))
		// (the very text first: one sent again as it was, a pool's check or a prepared
		// statement's, compared at once)
		if p := plainTexts[i].Load(); p != nil && (sqltok.SameText(*p, sql) || sqltok.SameButDigits(*p, sql)) {
			if k != 0 {
				plainHit.Store(i)
			}
			return true
		}
	}
	return false
}

// rememberPlain remembers sql, which held nothing checkSharedEngineUser looks for, among
// plainTexts, and reports whether it did: not when its digits could matter. Whether they could
// is the same for every text alike with sql but for its digits (a backslash is no digit, and
// a digit before an x is one in each of them), so a sqltok.Shape of sql may be marked plain
// exactly when sql is remembered.
func rememberPlain(sql string) bool {
	for i := 0; i < len(sql); i++ {
		if sql[i] == '\\' || i > 0 && sql[i]|0x20 == 'x' && isDigit(sql[i-1]) {
			return false
		}
	}
	s := strings.Clone(sql) // never a view of a buffer a frontend reuses
	plainTexts[plainNext.Add(1)%uint32(len(plainTexts))].Store(&s)
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
