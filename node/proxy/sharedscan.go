package proxy

import "github.com/queryflux/queryflux/internal/sqltok"

// The shared engine user's three statement checks (killers.go, activity.go, serverfiles.go)
// each look for a few words a statement must hold for the check to find anything, and for
// the marks of text an engine reads with escapes or as hex, where any word may hide. One pass
// over the statement's bytes, driven by a table of the bytes those start with, finds which of
// the checks a statement needs (sharedNeedsOf); most statements need none.

// sharedNeeds is a set of the shared engine user's statement checks.
type sharedNeeds uint8

const (
	needKillers    sharedNeeds                                                              = 1 << iota // checkSessionKillers: KILL, the functions that end sessions
	needSessions                                                                                        // hideOtherSessions: the views of the engine's sessions
	needFiles                                                                                           // checkServerFiles: the engine host's files and programs
	needRunTimeSQL                                                                                      // checkRunTimeSQL: SQL assembled at run time (its own scan, mayRunTimeSQL)
	needEngineUser                                                                                      // engineUserIn: what changes the engine user or every session's defaults
	needTwoPhase                                                                                        // checkTwoPhase: XA, PREPARE TRANSACTION, COMMIT/ROLLBACK PREPARED (twophase.go)
	needAll        = needKillers | needSessions | needFiles | needEngineUser | needTwoPhase             // what sharedNeedsOf finds
)

// sharedWords are the words the checks look for (lower-case ASCII, found in any ASCII case),
// each with the checks it matters to. "u&" starts a U&'...' string or U&"..." name, whose
// escapes may spell any word.
var sharedWords = []struct {
	word  string
	needs sharedNeeds
}{
	{"kill", needKillers}, {"_backend", needKillers},
	{"u&", needAll},
	{"pg_stat_", needSessions}, {"processlist", needSessions}, {"performance_schema", needSessions},
	{"innodb", needSessions}, {"information_schema", needSessions}, // whose table names MariaDB folds
	{"pg_prepared_xact", needSessions}, {"sys", needSessions}, {"explain", needSessions}, {"analyze", needSessions}, {"runtime", needSessions},
	{"pg_read", needFiles}, {"pg_ls_", needFiles}, {"pg_stat_file", needFiles}, {"pg_file_", needFiles},
	{"pg_logdir", needFiles}, {"program", needFiles}, {"lo_import", needFiles}, {"lo_export", needFiles},
	{"load_file", needFiles}, {"outfile", needFiles}, {"dumpfile", needFiles}, {"infile", needFiles},
	{"alter", needEngineUser}, {"drop", needEngineUser}, {"rename", needEngineUser}, {"revoke", needEngineUser},
	{"password", needEngineUser}, {"global", needEngineUser}, {"persist", needEngineUser}, {"shutdown", needEngineUser},
	{"prepare", needTwoPhase}, // and "xa", whose x starts a hex string too (sharedNeedsOf's startX)
}

// scanWord is a word of sharedWords as the scan compares it: fold has 0x20 where the word has a
// letter (a byte or'ed with it is the letter in either case) and 0 elsewhere.
type scanWord struct {
	word, fold string
	needs      sharedNeeds
}

// What a byte starts, in sharedStarts: nothing (0), the words of scanGroups[k-1] (k from 1),
// or one of the marks below.
const (
	startBackslash = 0xfd // an escape: one that may stand for a name byte needs every check
	startX         = 0xfe // X'..', a hex string, unless a name byte or a quote comes before
	startZero      = 0xff // 0x.., a hex number, unless a name byte comes before
)

// scanSeconds has, for each group of scanGroups, a bit set for each byte a word of it has second
// (in either case): most bytes that start a word are not followed by one of them.
var scanSeconds = func() (seconds [][4]uint64) {
	seconds = make([][4]uint64, len(scanGroups))
	for g, words := range scanGroups {
		for _, w := range words {
			for _, c := range []byte{w.word[1], w.word[1] &^ w.fold[1]} {
				seconds[g][c>>6] |= 1 << (c & 63)
			}
		}
	}
	return seconds
}()

var sharedStarts, scanGroups = func() (starts [256]uint8, groups [][]scanWord) {
	for _, w := range sharedWords {
		c := w.word[0]
		if starts[c] == 0 {
			groups = append(groups, nil)
			starts[c] = uint8(len(groups))
			if c >= 'a' && c <= 'z' {
				starts[c-0x20] = starts[c]
			}
		}
		fold := make([]byte, len(w.word))
		for i := range fold {
			if w.word[i] >= 'a' && w.word[i] <= 'z' {
				fold[i] = 0x20
			}
		}
		g := starts[c] - 1
		groups[g] = append(groups[g], scanWord{w.word, string(fold), w.needs})
	}
	starts['\\'], starts['x'], starts['X'], starts['0'] = startBackslash, startX, startX, startZero
	return starts, groups
}()

// sharedNeedsOf is the set of checks sql may need: those of the words it holds, and every
// check where it holds a backslash escape that may stand for a name byte (escapesToNameByte;
// a doubled backslash is itself) or the start of a hex literal (X'..' or 0x.., which MySQL's
// PREPARE and EXECUTE IMMEDIATE run as text: an X after no name byte and no quote, a hex
// literal right after a string being a syntax error to PostgreSQL, MySQL and Trino, and X'
// inside one, as in 'tax', text; a 0 after no name byte). One pass, no allocation.
func sharedNeedsOf(sql string) sharedNeeds {
	var needs sharedNeeds
	for i := 0; i < len(sql); i++ {
		k := sharedStarts[sql[i]]
		switch {
		case k == 0:
			continue
		case k == startBackslash:
			if i+1 < len(sql) {
				if sql[i+1] == '\\' {
					i++
				} else if escapesToNameByte(sql[i+1]) {
					return needAll
				}
			}
		case k == startX:
			if i+1 < len(sql) && sql[i+1] == '\'' && (i == 0 || sql[i-1] != '\'' && !sqltok.IsNameByte(sql[i-1])) {
				return needAll
			}
			if i+1 < len(sql) && sql[i+1]|0x20 == 'a' {
				needs |= needTwoPhase // "xa"
			}
		case k == startZero:
			if i+1 < len(sql) && sql[i+1]|0x20 == 'x' && (i == 0 || !sqltok.IsNameByte(sql[i-1])) {
				return needAll
			}
		default:
			if i+1 == len(sql) {
				continue // every word has two bytes or more
			}
			if c := sql[i+1]; scanSeconds[k-1][c>>6]&(1<<(c&63)) == 0 {
				continue
			}
			for _, w := range scanGroups[k-1] {
				if needs&w.needs != w.needs && hasWordAt(sql, i, w) {
					needs |= w.needs
				}
			}
			if needs == needAll {
				return needs
			}
		}
	}
	return needs
}

// hasWordAt reports whether sql holds w's word at i, its letters in any ASCII case (as
// strings.EqualFold, which folds no other byte of a statement to an ASCII letter of the same
// length: sqltok.ContainsFold).
func hasWordAt(sql string, i int, w scanWord) bool {
	if len(sql)-i < len(w.word) {
		return false
	}
	s := sql[i : i+len(w.word)]
	for j := 1; j < len(s); j++ {
		if s[j]|w.fold[j] != w.word[j] {
			return false
		}
	}
	return true
}
