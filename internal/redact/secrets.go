package redact

import (
	"regexp"
	"strings"
)

// hidden replaces a credential Secrets finds.
const hidden = "[redacted]"

// userinfoPassword matches the "user:password@" of a URL or DSN written in free text. The
// password runs to the last '@' before a '/', a quote or a space, so one containing '@' is
// hidden whole.
var userinfoPassword = regexp.MustCompile(`([^\s:/@"'=]+):[^\s/"']+@`)

// credentialParam matches a "name=value" whose name marks a credential, as a URL query
// parameter ("?password=pw&...") or a key=value DSN ("user=x password='p w'") writes it. The
// value runs to the next separator, or is quoted whole.
var credentialParam = regexp.MustCompile(`(?i)((?:^|[\s?&;,"'(])[\w.-]*(?:password|passwd|pwd|secret|token|key|credential|auth)[\w.-]*\s*=\s*)('[^']*'|"[^"]*"|[^\s&;,'"]+)`)

// Secrets hides the password of every "user:password@" in s (an endpoint, a DSN, an error
// message quoting one), and the value of every credential parameter ("?password=...",
// "sslpassword=..."): "postgres://app:pw@db/x" becomes "postgres://app:[redacted]@db/x".
func Secrets(s string) string {
	if strings.Contains(s, "@") {
		s = userinfoPassword.ReplaceAllString(s, "$1:"+hidden+"@")
	}
	if strings.Contains(s, "=") {
		s = credentialParam.ReplaceAllString(s, "${1}"+hidden)
	}
	return s
}

// Error is err's text for a log line, its credentials hidden (Secrets): a store's or a driver's
// error may quote the DSN or connection string it was given, password and all. nil is "".
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Secrets(err.Error())
}
