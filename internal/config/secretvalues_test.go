package config

import (
	"net/url"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestRedactURLHidesCredentialParameters: a password written as a URL query parameter or a
// key=value connection-string field is hidden wherever an endpoint is shown or quoted, and the
// fields around it stay readable.
func TestRedactURLHidesCredentialParameters(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pw := rapid.StringMatching(`[A-Za-z0-9!$()*+:@%~._-]{1,20}`).Draw(t, "password")
		name := rapid.SampledFrom([]string{"password", "PASSWORD", "sslpassword", "api_token", "secretKey", "pwd"}).Draw(t, "name")
		forms := []string{
			"postgres://u@db:5432/x?" + name + "=" + pw + "&sslmode=disable",
			"https://db:8443/?" + name + "=" + pw,
			"host=db port=5432 " + name + "=" + pw + " sslmode=disable",
			"host=db " + name + "='" + pw + " x' sslmode=disable",
			"host=db " + name + " = " + pw + " sslmode=disable",
			"endpoint \"host=db " + name + "=" + pw + "\" is not host:port",
			"endpoint \"" + name + "=" + pw + " host=db\" is not host:port",
		}
		for _, in := range forms {
			got := RedactURL(in)
			if strings.Contains(got, name+"="+pw) || strings.Contains(got, "= "+pw) || strings.Contains(got, pw+" x") {
				t.Fatalf("RedactURL(%q) = %q", in, got)
			}
			if !strings.Contains(got, "[redacted]") || !strings.Contains(got, "db") {
				t.Fatalf("RedactURL(%q) = %q: not what was expected around the secret", in, got)
			}
			if strings.Contains(in, "sslmode=disable") && !strings.Contains(got, "sslmode=disable") {
				t.Fatalf("RedactURL(%q) = %q: hid a field that is no secret", in, got)
			}
		}
	})
}

// TestValidationErrorHidesDSNPassword: an endpoint written as a key=value connection string is
// refused with an error that quotes it without its password.
func TestValidationErrorHidesDSNPassword(t *testing.T) {
	cfg := &Config{Clusters: []Cluster{{Name: "c", Engine: EngineMySQL, MaxRunningQueries: 1,
		Endpoint: "host=127.0.0.1 port=3306 user=x password=KVSECRET dbname=y"}}}
	errs := Errors(Validate(cfg))
	if errs == nil || !strings.Contains(errs.Error(), "endpoint") {
		t.Fatalf("want an endpoint error, got %v", errs)
	}
	if strings.Contains(errs.Error(), "KVSECRET") {
		t.Fatalf("the error shows the password: %v", errs)
	}
}

// TestScrubSecretsHidesEscapedForms: a secret is hidden from a message however a URL or
// connection string escaped it, and a secret that contains another is hidden whole.
func TestScrubSecretsHidesEscapedForms(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pw := rapid.StringMatching(`[A-Za-z0-9 !#$&'()*+,/:;=?@%~._-]{6,24}`).Draw(t, "password")
		short := pw[:3]
		u := url.URL{Scheme: "postgres", User: url.UserPassword("app", pw), Host: "db", RawQuery: url.Values{"sslpassword": {pw}}.Encode()}
		msg := "cannot parse `" + u.String() + "` nor " + url.PathEscape(pw) + " nor " + pw
		got := ScrubSecrets(msg, []string{short, pw})
		for _, form := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
			if strings.Contains(got, form) {
				t.Fatalf("ScrubSecrets left %q in %q", form, got)
			}
		}
	})
}

// TestSecretValuesOfACluster lists each place a cluster can hold a secret.
func TestSecretValuesOfACluster(t *testing.T) {
	c := Cluster{
		Endpoint:    "postgres://u:URLPW@db/x?password=QUERYPW&sslmode=disable",
		Credentials: Credentials{Password: "CREDPW", Token: "TOKEN"},
		Options:     map[string]string{"sslpassword": "OPTPW", "dsn": "mysql://u:OPTURLPW@h/d", "application_name": "visible"},
	}
	got := strings.Join(c.SecretValues(), ",")
	for _, want := range []string{"URLPW", "QUERYPW", "CREDPW", "TOKEN", "OPTPW", "OPTURLPW"} {
		if !strings.Contains(got, want) {
			t.Errorf("SecretValues misses %s: %s", want, got)
		}
	}
	if strings.Contains(got, "visible") || strings.Contains(got, "disable") {
		t.Errorf("SecretValues lists a value that is no secret: %s", got)
	}
}
