package sqltok

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Split returns the statements of sql (Generic dialect), separated by ; outside literals and
// comments, trimmed, without the separator; empty statements are left out.
func Split(sql string) []string { return SplitDialect(sql, Generic) }

// SplitDialect is Split with the lexical rules of d.
func SplitDialect(sql string, d Dialect) []string {
	if one, ok := singleStatement(sql, d); ok {
		return one
	}
	return splitTokens(sql, d)
}

// singleStatement is SplitDialect's fast path (nearly every query takes it): a string without
// comment starters and without a ';' (but one at its end) is one statement, or none when blank.
// The tokenizer's allocations showed up as the largest item of the proxy's per-query profile.
func singleStatement(sql string, d Dialect) ([]string, bool) {
	const blanks = " \t\n\r\f"
	special, semi := ";-/", ";-/'\"$\\`"
	if d == MySQL {
		special, semi = ";-/#", ";-/#'\"$\\`"
	}
	trimmed := strings.Trim(sql, blanks)
	if body, ok := strings.CutSuffix(trimmed, ";"); ok {
		// One trailing ';' (pgbench, psql scripts): fine unless the ';' could be inside a
		// string, identifier or dollar quote left open, or anything else needs the tokenizer.
		if strings.ContainsAny(body, semi) {
			return nil, false
		}
		trimmed = strings.Trim(body, blanks)
	} else if strings.ContainsAny(sql, special) {
		return nil, false
	}
	if strings.TrimSpace(trimmed) != trimmed {
		return nil, false // other Unicode blanks: leave them to the tokenizer's rules
	}
	if trimmed == "" {
		return nil, true
	}
	return []string{trimmed}, true
}

// statementText is the statement of sql from start to end (its ';' or the end of sql).
func statementText(sql string, start, end int, d Dialect) string {
	stmt := strings.TrimSpace(sql[start:end])
	if d == MySQL && end < len(sql) && strings.HasSuffix(stmt, "--") {
		// MySQL reads "--" before ';' as two minus signs, but at the end of a statement
		// as a comment: keep the ';' so the statement means alone what it meant here.
		stmt = strings.TrimSpace(sql[start : end+1])
	}
	return stmt
}

// splitTokens is SplitDialect by the tokenizer, in one pass.
func splitTokens(sql string, d Dialect) []string {
	var out []string
	start, code := 0, false // code: a significant token since start
	add := func(end int) {
		if !code {
			return
		}
		out = append(out, statementText(sql, start, end, d))
	}
	sc := NewScanner(sql, d)
	for t, ok := sc.Next(); ok; t, ok = sc.Next() {
		switch {
		case t.Kind == Punct && t.Text == ";":
			add(t.Pos)
			start, code = t.Pos+1, false
		case t.Significant():
			code = true
		}
	}
	add(len(sql))
	return out
}

// Kind is what a statement does, for guardrails (DDL and DML detection) and caching.
type Kind int

const (
	KindOther Kind = iota
	KindSelect
	KindInsert // INSERT, REPLACE, UPSERT
	KindUpdate // UPDATE, MERGE
	KindDelete
	KindDDL // CREATE, ALTER, DROP, TRUNCATE, RENAME, COMMENT, GRANT, REVOKE
	KindSet // SET, RESET, USE
	KindShow
	KindExplain
	KindTransaction // BEGIN, START TRANSACTION, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, END, ABORT
	KindTwoPhase    // XA ..., PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED (TwoPhase)
)

var kindText = [...]string{"other", "select", "insert", "update", "delete", "ddl", "set", "show", "explain", "transaction", "two-phase"}

func (k Kind) String() string {
	if int(k) < len(kindText) {
		return kindText[k]
	}
	return "other"
}

var leadingKinds = map[string]Kind{
	"select": KindSelect, "values": KindSelect, "table": KindSelect,
	"insert": KindInsert, "replace": KindInsert, "upsert": KindInsert,
	"update": KindUpdate, "merge": KindUpdate,
	"delete": KindDelete,
	"create": KindDDL, "alter": KindDDL, "drop": KindDDL, "truncate": KindDDL, "rename": KindDDL,
	"comment": KindDDL, "grant": KindDDL, "revoke": KindDDL,
	"set": KindSet, "reset": KindSet, "use": KindSet,
	"show": KindShow, "describe": KindShow, "desc": KindShow,
	"explain": KindExplain,
	"begin":   KindTransaction, "start": KindTransaction, "commit": KindTransaction,
	"rollback": KindTransaction, "savepoint": KindTransaction, "release": KindTransaction,
	"end": KindTransaction, "abort": KindTransaction,
}

// StatementKind classifies the first statement of sql. A WITH query is classified by the
// statement after its common table expressions (WITH ... DELETE is a delete).
func StatementKind(sql string) Kind { return StatementKindDialect(sql, Generic) }

// StatementKindDialect is StatementKind with the lexical rules of d.
func StatementKindDialect(sql string, d Dialect) Kind { return kindOf(significant(Tokenize(sql, d))) }

// kindOf classifies a statement given as its significant tokens.
func kindOf(toks []Token) Kind {
	i := 0
	for i < len(toks) && toks[i].Text == "(" {
		i++
	}
	if i >= len(toks) || toks[i].Kind != Word {
		return KindOther
	}
	if TwoPhase(toks[i:]) != "" {
		return KindTwoPhase
	}
	first := strings.ToLower(toks[i].Text)
	if first == "with" {
		return kindAfterWith(toks[i+1:])
	}
	k, ok := leadingKinds[first]
	if !ok {
		return KindOther
	}
	if first == "start" && !(i+1 < len(toks) && strings.EqualFold(toks[i+1].Text, "transaction")) {
		return KindOther
	}
	if k == KindExplain {
		return explainKind(toks[i+1:])
	}
	return k
}

// TwoPhase names the two-phase commit statement st (its significant tokens) is, or "": MySQL's
// and MariaDB's XA statements (XA START, XA END, XA PREPARE, XA COMMIT, XA ROLLBACK, XA RECOVER:
// no other statement starts with the word XA), PostgreSQL's PREPARE TRANSACTION 'gid' (not
// PREPARE transaction AS ..., a prepared statement named "transaction", nor MySQL's PREPARE
// transaction FROM ...), COMMIT PREPARED and ROLLBACK PREPARED. Only bare words count: a string
// or a quoted name holding XA is no such statement.
func TwoPhase(st []Token) string {
	word := func(i int) string {
		if i < len(st) && st[i].Kind == Word {
			return strings.ToLower(st[i].Text)
		}
		return ""
	}
	switch word(0) {
	case "xa":
		if w := word(1); w != "" {
			return "XA " + strings.ToUpper(w)
		}
		return "XA"
	case "prepare":
		if word(1) == "transaction" && !(len(st) > 2 && (st[2].IsWord("as", "from") || st[2].Text == "(")) {
			return "PREPARE TRANSACTION"
		}
	case "commit", "rollback":
		if word(1) == "prepared" {
			return strings.ToUpper(word(0)) + " PREPARED"
		}
	}
	return ""
}

// explainKind classifies what follows EXPLAIN. EXPLAIN ANALYZE runs its statement (in
// PostgreSQL, MySQL and Trino alike), so it is that statement's kind: EXPLAIN ANALYZE DELETE
// is a delete. A plain EXPLAIN only plans, and is KindExplain.
func explainKind(toks []Token) Kind {
	analyze, depth := false, 0
	for i, t := range toks {
		w := strings.ToLower(t.Text)
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case t.Kind == Word && (w == "analyze" || w == "analyse"):
			analyze = !(depth > 0 && i+1 < len(toks) && isFalse(toks[i+1].Text))
		case depth == 0 && t.Kind == Word && w != "verbose" && w != "format" && w != "plan" && w != "query":
			if k, ok := leadingKinds[w]; ok && k != KindExplain || w == "with" {
				if !analyze {
					return KindExplain
				}
				return kindOf(toks[i:])
			}
		}
	}
	return KindExplain
}

func isFalse(s string) bool {
	switch strings.ToLower(s) {
	case "false", "off", "0":
		return true
	}
	return false
}

// StatementKinds classifies every statement of sql (Generic dialect), in order: a guardrail
// must look at all of them, since "select 1; drop table t" is also a drop.
func StatementKinds(sql string) []Kind {
	stmts := Split(sql)
	kinds := make([]Kind, len(stmts))
	for i, s := range stmts {
		kinds[i] = StatementKind(s)
	}
	return kinds
}

// kindAfterWith finds the first statement keyword at parenthesis depth 0 after WITH.
func kindAfterWith(toks []Token) Kind {
	i := TopLevel(toks, func(t Token) bool {
		if t.Kind != Word {
			return false
		}
		switch strings.ToLower(t.Text) {
		case "select", "values", "table", "insert", "update", "delete", "merge":
			return true
		}
		return false
	})
	if i < 0 {
		return KindOther
	}
	return leadingKinds[strings.ToLower(toks[i].Text)]
}

func significant(toks []Token) []Token {
	out := toks[:0:0]
	for _, t := range toks {
		if t.Significant() {
			out = append(out, t)
		}
	}
	return out
}

// nonDeterministicCalls are functions whose result changes between calls with the same
// arguments; nonDeterministicWords need no parentheses (SQL's special value functions).
var (
	nonDeterministicCalls = map[string]bool{
		"now": true, "random": true, "rand": true, "uuid": true, "gen_random_uuid": true,
		"uuid_generate_v1": true, "uuid_generate_v1mc": true, "uuid_generate_v4": true,
		"uuid_short": true, "uuidv4": true, "uuidv7": true, "random_uuid": true, "newid": true,
		"clock_timestamp": true, "statement_timestamp": true, "transaction_timestamp": true,
		"timeofday": true, "sysdate": true, "curdate": true, "curtime": true,
		"unix_timestamp": true, "utc_timestamp": true, "utc_date": true, "utc_time": true,
		"current_timestamp": true, "current_date": true, "current_time": true,
		"localtime": true, "localtimestamp": true, "nextval": true, "currval": true,
		"lastval": true, "setval": true, "last_insert_id": true, "random_string": true,
		"pg_backend_pid": true, "connection_id": true, "txid_current": true, "sleep": true,
		"pg_sleep": true, "getdate": true, "systimestamp": true, "current_timestamp_millis": true,
	}
	nonDeterministicWords = map[string]bool{
		"current_timestamp": true, "current_date": true, "current_time": true,
		"localtime": true, "localtimestamp": true, "sysdate": true,
	}
)

// IsNonDeterministic reports whether sql calls a function whose result changes from one run to
// the next (now(), random(), current_timestamp, uuid generators, sequences, ...), so its result
// must not be cached. Names inside literals, comments and quoted identifiers do not count.
func IsNonDeterministic(sql string) bool { return IsNonDeterministicDialect(sql, Generic) }

// IsNonDeterministicDialect is IsNonDeterministic with the lexical rules of d.
func IsNonDeterministicDialect(sql string, d Dialect) bool {
	return nonDeterministic(significant(Tokenize(sql, d)))
}

// nonDeterministic is IsNonDeterministic on significant tokens.
func nonDeterministic(toks []Token) bool {
	for i, t := range toks {
		if t.Kind != Word {
			continue
		}
		w := strings.ToLower(t.Text)
		if i > 0 && toks[i-1].Text == "." && !nonDeterministicCalls[w] {
			continue // a column named like a function: t.now
		}
		if nonDeterministicWords[w] {
			return true
		}
		if nonDeterministicCalls[w] && i+1 < len(toks) && toks[i+1].Text == "(" {
			return true
		}
	}
	return false
}

// Normalize returns the parameterized form of sql (Generic dialect): literals become ?, a sign
// directly before a number is folded into it, IN lists of only placeholders collapse to one,
// comments are dropped, whitespace is folded and unquoted words are lower-cased. Two queries
// that differ only in literal values, spacing, comments or keyword case normalize alike.
func Normalize(sql string) string { return NormalizeDialect(sql, Generic) }

// NormalizeDialect is Normalize with the lexical rules of d.
func NormalizeDialect(sql string, d Dialect) string {
	return normalizeTokens(significant(Tokenize(sql, d)))
}

// normalizeTokens is Normalize on significant tokens.
func normalizeTokens(toks []Token) string {
	out := make([]string, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.IsLiteral():
			out = append(out, "?")
		case isSign(t) && i+1 < len(toks) && toks[i+1].Kind == Number && !endsValue(out):
			out = append(out, "?")
			i++
		case t.Kind == Param:
			out = append(out, "?")
		case t.Kind == Word:
			out = append(out, strings.ToLower(t.Text))
		case t.Kind == Invalid:
			out = append(out, "?") // never echo bytes we could not read: they may be a literal
		case t.Kind == Operator:
			out = appendOperator(out, t.Text)
		default:
			out = append(out, t.Text)
		}
	}
	return join(collapseInLists(out))
}

// appendOperator appends an operator run cut between every two dashes, so join spaces them: MySQL
// reads "--" as two operators where no blank follows, and the blank join puts after it would
// make it a comment when the normalized text is read again.
func appendOperator(out []string, op string) []string {
	for {
		i := strings.Index(op, "--")
		if i < 0 {
			return append(out, op)
		}
		out = append(out, op[:i+1])
		op = op[i+1:]
	}
}

func isSign(t Token) bool { return t.Kind == Operator && (t.Text == "-" || t.Text == "+") }

// endsValue reports whether the normalized output so far ends with something a binary
// operator could follow (so the sign is an operator, not part of a number).
func endsValue(out []string) bool {
	if len(out) == 0 {
		return false
	}
	last := out[len(out)-1]
	switch {
	case last == "?" || last == ")" || last == "]":
		return true
	case last == "(" || last == "," || last == "[":
		return false
	}
	c := last[0]
	if isAlpha(c) || c == '_' || c == '"' || c == '`' || c >= 0x80 {
		return !operatorKeywords[last]
	}
	return false
}

// operatorKeywords are words after which a sign starts a value, not a subtraction.
var operatorKeywords = map[string]bool{
	"select": true, "where": true, "and": true, "or": true, "not": true, "in": true, "values": true,
	"set": true, "when": true, "then": true, "else": true, "between": true, "like": true, "is": true,
	"limit": true, "offset": true, "by": true, "having": true, "on": true, "return": true,
	"returning": true, "case": true, "interval": true, "as": true, "array": true, "default": true,
}

// collapseInLists turns "in ( ? , ? , ? )" into "in ( ? )".
func collapseInLists(out []string) []string {
	res := out[:0:0]
	for i := 0; i < len(out); i++ {
		res = append(res, out[i])
		if out[i] != "in" || i+2 >= len(out) || out[i+1] != "(" || out[i+2] != "?" {
			continue
		}
		j := i + 3
		for j+1 < len(out) && out[j] == "," && out[j+1] == "?" {
			j += 2
		}
		if j < len(out) && out[j] == ")" {
			res = append(res, "(", "?", ")")
			i = j
		}
	}
	return res
}

// join puts single spaces between tokens, except around "." and inside brackets.
func join(toks []string) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && needsSpace(toks[i-1], t) {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	return b.String()
}

func needsSpace(prev, cur string) bool {
	switch {
	case cur == "," || cur == ")" || cur == "]" || cur == "." || cur == ";":
		return false
	case prev == "(" || prev == "[" || prev == ".":
		return false
	}
	return true
}

// Digest is a stable hash of Normalize(sql): 16 hex digits.
func Digest(sql string) string { return DigestNormalized(Normalize(sql)) }

// DigestDialect is Digest with the lexical rules of d.
func DigestDialect(sql string, d Dialect) string { return DigestNormalized(NormalizeDialect(sql, d)) }

// DigestNormalized hashes an already normalized statement.
func DigestNormalized(normalized string) string {
	s := strconv.FormatUint(xxhash.Sum64String(normalized), 16)
	return strings.Repeat("0", 16-len(s)) + s
}

// AppendNumberShape appends to dst sql with every number that stands alone (not glued to a
// word, such as t1 or 1e5) written as 0, for memoizing Normalize: statements of one shape
// differ only in such numbers, so they normalize alike in every dialect. A statement with a
// quoted identifier ("...", `...`: kept as written by Normalize, digits and all) is its own
// shape. Appending to a buffer of the caller's lets a memo be looked up with no allocation.
func AppendNumberShape(dst []byte, sql string) []byte {
	if strings.IndexByte(sql, '"') >= 0 || strings.IndexByte(sql, '`') >= 0 { // a tenth of ContainsAny's cost
		return append(dst, sql...)
	}
	last := 0 // sql[:last] is in dst
	for i := nextDigit(sql, 0); i < len(sql); i = nextDigit(sql, i) {
		j := i
		for j < len(sql) && isDigit(sql[j]) {
			j++
		}
		if (i == 0 || !gluesNumber(sql[i-1])) && (j == len(sql) || !gluesNumber(sql[j])) && sql[i:j] != "0" {
			dst = append(append(dst, sql[last:i]...), '0')
			last = j
		}
		i = j
	}
	return append(dst, sql[last:]...)
}

// SameText is a == b for a memo comparing a text with the last it kept: the same string at
// once, else the last eight bytes first (texts of one shape differ mostly in a number near
// their end, pgbench's aid, which == would find only after comparing every byte before it).
func SameText(a, b string) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	if n == 0 || unsafe.StringData(a) == unsafe.StringData(b) {
		return true
	}
	return (n < 8 || a[n-8:] == b[n-8:]) && a == b
}

// NumbersStandAlone reports whether every run of digits in s is a number standing alone (not
// glued to a word, as in t1 or 1e5) and s quotes no identifier: then every text that
// SameButDigits finds alike with s has s's number shape (their runs of digits meet the same
// bytes), and a memo of s's shape can compare the cheaper way.
func NumbersStandAlone(s string) bool {
	if strings.IndexByte(s, '"') >= 0 || strings.IndexByte(s, '`') >= 0 {
		return false
	}
	for i := nextDigit(s, 0); i < len(s); i = nextDigit(s, i) {
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if i > 0 && gluesNumber(s[i-1]) || j < len(s) && gluesNumber(s[j]) {
			return false
		}
		i = j
	}
	return true
}

// SameNumberShape reports whether AppendNumberShape writes a and b alike, without writing
// either: a memo that keeps its last statement finds the next of the same shape (pgbench's,
// most generated SQL) by one pass over both, instead of writing its key and hashing it.
func SameNumberShape(a, b string) bool {
	if a == b {
		return true
	}
	if strings.IndexByte(b, '"') >= 0 || strings.IndexByte(b, '`') >= 0 {
		return false // b is its own shape; a quote of a's differs from b where b has none
	}
	i, j := 0, 0 // a[:i] and b[:j] have one shape, and neither ends inside a run of digits
	for {
		n := commonPrefix(a[i:], b[j:])
		i, j = i+n, j+n
		if i == len(a) && j == len(b) {
			return true
		}
		// They differ here: only a number standing alone in both may, from where its digits
		// start (the same in both) to where each one's end.
		s := 0
		for s < n && isDigit(a[i-s-1]) {
			s++
		}
		i, j = i-s, j-s
		if i == len(a) || j == len(b) || !isDigit(a[i]) || !isDigit(b[j]) || i > 0 && gluesNumber(a[i-1]) {
			return false
		}
		for i < len(a) && isDigit(a[i]) {
			i++
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if i < len(a) && gluesNumber(a[i]) {
			return false // glued in a; in b too, or b differs from a at the run's end (no digit)
		}
	}
}

// SameButDigits reports whether a and b are the same bytes but for their runs of ASCII digits
// (a run of either matching one of the other, of any length): a memo of a text that none of
// whose words holds a digit finds the same text with other numbers (pgbench's) by one pass
// over both, eight bytes at a time where they agree. It reads a string or a byte slice (the
// PostgreSQL loop's message bytes) alike.
func SameButDigits[T ~string | ~[]byte](a, b T) bool {
	if len(a) == len(b) && digitsDifferOnly(a, b) {
		return true // the common case (a number of the same length), a word's few operations a word
	}
	i, j := 0, 0
	for {
		n := commonPrefix(a[i:], b[j:])
		i, j = i+n, j+n
		if i == len(a) && j == len(b) {
			return true
		}
		// They differ here: only inside a run of digits of both (both bytes digits, or the run
		// they share so far goes on in one of them).
		da, db := i < len(a) && isDigit(a[i]), j < len(b) && isDigit(b[j])
		if !(da && db) && !((da || db) && i > 0 && isDigit(a[i-1])) {
			return false
		}
		for i < len(a) && isDigit(a[i]) {
			i++
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	}
}

// digitsDifferOnly reports whether a and b, of one length, differ only where both hold an
// ASCII digit: then their runs of digits lie at the same places and every other byte is the
// same, so SameButDigits holds. False says nothing (a run may be longer in one of them).
func digitsDifferOnly[T ~string | ~[]byte](a, b T) bool {
	n := min(len(a), len(b))
	k := 0
	for ; k+8 <= n; k += 8 {
		if !digitsDifferOnly8(word8(a[k:k+8]), word8(b[k:k+8])) {
			return false
		}
	}
	if k < n && n >= 8 { // the last eight bytes, some of them read already: the test is per byte
		return digitsDifferOnly8(word8(a[n-8:n]), word8(b[n-8:n]))
	}
	for ; k < n; k++ {
		if a[k] != b[k] && !(isDigit(a[k]) && isDigit(b[k])) {
			return false
		}
	}
	return true
}

// digitsDifferOnly8 is digitsDifferOnly of two words' eight bytes.
func digitsDifferOnly8(wa, wb uint64) bool {
	x := wa ^ wb
	return x == 0 || nonzeroBytes(x)&^(digitsOf(wa)&digitsOf(wb)) == 0
}

// nonzeroBytes has the top bit of each of x's nonzero bytes set, and no other bit: a byte's low
// seven bits plus 0x7f reach its top bit unless they are all zero, and no sum carries out of
// its byte.
func nonzeroBytes(x uint64) uint64 {
	const low7, tops = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	return ((x & low7) + low7 | x) & tops
}

// commonPrefix is the length of the longest common prefix of a and b, eight bytes at a time.
func commonPrefix[T ~string | ~[]byte](a, b T) int {
	n := min(len(a), len(b))
	k := 0
	for ; k+8 <= n; k += 8 {
		if x := word8(a[k:k+8]) ^ word8(b[k:k+8]); x != 0 {
			return k + bits.TrailingZeros64(x)/8
		}
	}
	for k < n && a[k] == b[k] {
		k++
	}
	return k
}

// word8 is s's eight bytes as a little-endian word.
func word8[T ~string | ~[]byte](s T) uint64 {
	_ = s[7] // one bounds check: the compiler then reads the eight bytes as one word
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// nextDigit is the index of the first ASCII digit of s at or after i, len(s) when none: eight
// bytes at a time (digits8), as most of a statement is not digits.
func nextDigit(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := digits8(s[i : i+8]); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s) && !isDigit(s[i]); i++ {
	}
	return i
}

// digits8 has the top bit of each of s's first eight bytes that is an ASCII digit set, and no
// other bit. With the top bits cleared no byte's sum carries into the next: b+0x50 reaches
// 0x80 from '0' on and b+0x46 from '9'+1 on; a byte with its top bit set is no digit.
func digits8(s string) uint64 {
	return digitsOf(word8(s))
}

// digitsOf is digits8 of the eight bytes of x, the first the lowest.
func digitsOf(x uint64) uint64 {
	const low7, tops = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	y := x & low7
	return (y + 0x5050505050505050) &^ (y + 0x4646464646464646) &^ x & tops
}

// gluesNumber reports whether a digit run next to c is part of a word, a parameter ($1), or a
// number with an exponent or digit separators (1e5, 1_000), whose digits AppendNumberShape keeps.
func gluesNumber(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '_' || c == '$' || c >= utf8.RuneSelf
}
