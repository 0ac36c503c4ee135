package config

import "log/slog"

// Secret is a credential held in memory. Every way it can print (fmt's %v/%s/%q/%#v, slog,
// encoding/json and text marshaling) shows "[redacted]"; Reveal is the one way to read it.
// The worker snapshot carries credentials through its own plain-string wire type, never through
// a Secret's marshaling.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value, for the one place that must present it (a backend login).
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s != "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return s.display() }

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return `config.Secret("` + s.display() + `")` }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.display()) }

// MarshalText implements encoding.TextMarshaler (used by JSON, YAML and slog's text handler).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.display()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, so a Secret decodes from a plain string.
// UnmarshalYAML decodes a plain string. Without it go-yaml falls back to UnmarshalText, for which
// it formats the whole document once per secret: parsing was quadratic in the file's size.
func (s *Secret) UnmarshalYAML(unmarshal func(any) error) error {
	var v string
	if err := unmarshal(&v); err != nil {
		return err
	}
	*s = Secret(v)
	return nil
}

func (s *Secret) UnmarshalText(b []byte) error {
	*s = Secret(b)
	return nil
}

// display is "" for an empty secret (so "not set" stays visible) and "[redacted]" otherwise.
func (s Secret) display() string {
	if s == "" {
		return ""
	}
	return redacted
}
