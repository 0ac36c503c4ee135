package redact

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorHidesEveryFormOfAPassword: a driver's error quoting a URL's userinfo, a key=value
// DSN or a query parameter keeps where it went and loses the password; no error is "".
func TestErrorHidesEveryFormOfAPassword(t *testing.T) {
	err := errors.New(`dial postgres://qf:pw1@db:5432/x?sslpassword=pw2 (host=db password='p w3' user=qf): refused`)
	got := Error(err)
	if strings.Contains(got, "pw1") || strings.Contains(got, "pw2") || strings.Contains(got, "w3") {
		t.Fatalf("Error kept a password: %q", got)
	}
	if !strings.Contains(got, "postgres://qf:[redacted]@db:5432") || !strings.Contains(got, "user=qf): refused") {
		t.Fatalf("Error lost what is not a password: %q", got)
	}
	if Error(nil) != "" {
		t.Fatalf("Error(nil) = %q", Error(nil))
	}
}
