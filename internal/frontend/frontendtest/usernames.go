package frontendtest

// ControlCharacterName is a user name holding a control character, and the character a login
// refusal must name (query.UserNameRefused).
type ControlCharacterName struct{ Name, Char string }

// ControlCharacterNames holds a name for each kind of control character but NUL: C0, DEL, C1.
// The PostgreSQL and MySQL wires end a name at a NUL, so their logins cannot carry one.
var ControlCharacterNames = []ControlCharacterName{
	{"al\x01ice", "U+0001"}, {"alice\n", "U+000A"}, {"a\tb", "U+0009"}, {"a\x1bb", "U+001B"},
	{"a\x7fb", "U+007F"}, {"a\u0085b", "U+0085"},
}

// NULAndControlCharacterNames is ControlCharacterNames with names holding a NUL (inside, alone,
// last), for the logins whose names are framed by length (Trino's and Flight SQL's Basic auth).
var NULAndControlCharacterNames = append([]ControlCharacterName{
	{"a\x00b", "U+0000"}, {"\x00", "U+0000"}, {"alice\x00", "U+0000"},
}, ControlCharacterNames...)
