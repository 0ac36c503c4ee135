package config

import (
	"strings"

	"github.com/queryflux/queryflux/internal/redact"
)

// RedactURL hides the password of every "user:password@" in s (an endpoint, a DSN, an error
// message quoting one), and the value of every credential parameter ("?password=...",
// "sslpassword=..."): "postgres://app:pw@db/x" shows as "postgres://app:[redacted]@db/x".
func RedactURL(s string) string { return redact.Secrets(s) }

// secretOptionWords mark an option whose value is a credential.
var secretOptionWords = []string{"password", "passwd", "pwd", "secret", "token", "key", "credential", "auth"}

// IsSecretOption reports whether an engine option named name holds a credential.
func IsSecretOption(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretOptionWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactOptions returns opts for display: credential options (IsSecretOption) hidden, passwords
// inside URL-like values hidden. opts itself is not changed.
func RedactOptions(opts map[string]string) map[string]string {
	if opts == nil {
		return nil
	}
	out := make(map[string]string, len(opts))
	for _, k := range sortedKeys(opts) {
		v := opts[k]
		if IsSecretOption(k) && v != "" {
			out[k] = redacted
		} else {
			out[k] = RedactURL(v)
		}
	}
	return out
}

// RedactHash is a password hash for display: "[redacted]", or "" when none is set.
func RedactHash(h string) string { return Secret(h).String() }
