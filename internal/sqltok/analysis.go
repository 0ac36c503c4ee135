package sqltok

// Analysis is one request's SQL read once: its tokens, its statements and what each does.
// The core's checks (read-only groups, blocked statements), its cache key (one statement, a
// select, nothing non-deterministic) and the engines' parameter rewriting all read this value
// instead of tokenizing the SQL again. It is never changed once made.
type Analysis struct {
	SQL        string
	Dialect    Dialect
	Tokens     []Token     // every token of SQL, blanks and comments included
	Statements []Statement // SQL split at top-level semicolons; blank statements left out
	Params     int         // CountParams(SQL, Dialect)
}

// Statement is one statement of an Analysis.
type Statement struct {
	Text             string  // trimmed, without its semicolon
	Significant      []Token // its tokens without blanks and comments
	Kind             Kind
	NonDeterministic bool // calls a function whose result changes between runs
}

// Analyze reads sql with the rules of d.
func Analyze(sql string, d Dialect) *Analysis {
	a := &Analysis{SQL: sql, Dialect: d, Tokens: Tokenize(sql, d)}
	sig := significant(a.Tokens)
	start, first := 0, 0 // the statement's first byte and first significant token
	add := func(end, last int) {
		if last > first {
			toks := sig[first:last:last]
			a.Statements = append(a.Statements, Statement{
				Text: statementText(sql, start, end, d), Significant: toks,
				Kind: kindOf(toks), NonDeterministic: nonDeterministic(toks),
			})
		}
	}
	for i, t := range sig {
		if t.Kind == Punct && t.Text == ";" {
			add(t.Pos, i)
			start, first = t.Pos+1, i+1
		}
	}
	add(len(sql), len(sig))
	a.Params = countParamTokens(a.Tokens, d)
	return a
}

// Texts are the statements' texts: SplitDialect's answer.
func (a *Analysis) Texts() []string {
	if len(a.Statements) == 0 {
		return nil
	}
	out := make([]string, len(a.Statements))
	for i, s := range a.Statements {
		out[i] = s.Text
	}
	return out
}

// Normalized is NormalizeDialect(a.SQL, a.Dialect), from the tokens already read.
func (a *Analysis) Normalized() string { return normalizeTokens(significant(a.Tokens)) }

// Fingerprint is DigestDialect(a.SQL, a.Dialect): the statement's shape without its literals.
func (a *Analysis) Fingerprint() string { return DigestNormalized(a.Normalized()) }
