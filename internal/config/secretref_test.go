package config

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var refSource = MapSecrets{
	Env:   map[string]string{"PG_PW": "env-secret", "OWN_PW": "env-secret", "EMPTY": ""},
	Files: map[string]string{"/run/secrets/token": "file-secret\n", "/run/secrets/own": "file-secret\n"},
}

func TestResolveRefs(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                              "plain",
		"${env:PG_PW}":                       "env-secret",
		"${file:/run/secrets/token}":         "file-secret",
		"postgres://u:${env:PG_PW}@h:5432/d": "postgres://u:env-secret@h:5432/d",
		"$${env:PG_PW}":                      "${env:PG_PW}",
		"a${env:EMPTY}b":                     "ab",
		"${env:PG_PW}${env:PG_PW}":           "env-secretenv-secret",
	} {
		if got, err := ResolveRefs(in, refSource); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"${env:MISSING}":        "environment variable MISSING is not set",
		"${file:/nope}":         "secret file /nope: does not exist",
		"${env:bad-name}":       "not an environment variable name",
		"${vault:x}":            `unknown reference kind "vault"`,
		"x${env:PG_PW":          "unterminated reference",
		"${env:PG_PW}${env:NO}": "environment variable NO is not set",
	} {
		_, err := ResolveRefs(in, refSource)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "env-secret") {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// TestResolveSecretsEveryField: every field a secret goes in takes a reference; a missing one
// comes back with its path and the variable's name.
func TestResolveSecretsEveryField(t *testing.T) {
	cfg, err := Parse([]byte(`
queryflux:
  adminApi: {token: "${env:OWN_PW}"}
  workerApi: {secret: "${env:OWN_PW}"}
  controlPlane: {secret: "${file:/run/secrets/own}"}
  persistence: {databaseUrl: "postgres://qf:${env:OWN_PW}@db/qf", configKey: "${env:OWN_PW}"}
  clusterCredentials: {pg: {password: "${env:PG_PW}", token: "${env:PG_PW}"}}
clusters:
  - name: pg
    engine: postgres
    endpoint: "postgres://u:${env:PG_PW}@h/d"
    maxRunningQueries: 1
    credentials: {user: u, password: "${env:PG_PW}", token: "${file:/run/secrets/token}"}
    options: {sslpassword: "${env:PG_PW}"}
    variants: {v: {endpoint: "postgres://v:${env:PG_PW}@h/d", credentials: {password: "${env:PG_PW}"}, options: {apiKey: "${env:PG_PW}"}}}
settings:
  security:
    users: [{name: a, passwordHash: "${env:PG_PW}"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveSecrets(cfg, refSource, ""); err != nil {
		t.Fatal(err)
	}
	var errs Errors
	q, c := cfg.QueryFlux, cfg.Clusters[0]
	v := c.Variants["v"]
	for what, got := range map[string]string{
		"adminApi.token": q.AdminAPI.Token.Reveal(), "workerApi.secret": q.WorkerAPI.Secret.Reveal(),
		"persistence.configKey": q.Persistence.ConfigKey.Reveal(), "clusterCredentials.pg.password": q.ClusterCredentials["pg"].Password.Reveal(),
		"clusterCredentials.pg.token": q.ClusterCredentials["pg"].Token.Reveal(), "credentials.password": c.Credentials.Password.Reveal(),
		"options.sslpassword": c.Options["sslpassword"], "variant password": v.Credentials.Password.Reveal(), "variant option": v.Options["apiKey"],
		"passwordHash": cfg.Settings.Security.Users[0].PasswordHash,
	} {
		if got != "env-secret" {
			t.Errorf("%s = %q", what, got)
		}
	}
	if q.ControlPlane.Secret.Reveal() != "file-secret" || c.Credentials.Token.Reveal() != "file-secret" ||
		q.Persistence.DatabaseURL.Reveal() != "postgres://qf:env-secret@db/qf" || c.Endpoint != "postgres://u:env-secret@h/d" ||
		*v.Endpoint != "postgres://v:env-secret@h/d" {
		t.Errorf("resolved: %+v %+v", q, c)
	}

	// Where a value is shown, a reference would show what it names: refused.
	cfg, _ = Parse([]byte("clusters: [{name: d, engine: duckdb, endpoint: '${file:/etc/hostname}', maxRunningQueries: 1, options: {path: '${env:PG_PW}'}}]\n"))
	_, err = ResolveSecrets(cfg, refSource, "")
	if !errors.As(err, &errs) || len(errs) != 2 || errs[0].Path != "clusters[0].endpoint" || errs[1].Path != "clusters[0].options.path" {
		t.Fatalf("references where values are shown: %v", err)
	}

	cfg, _ = Parse([]byte("queryflux: {adminApi: {token: '${env:NOPE}'}}\nclusters: [{name: pg, engine: postgres, endpoint: 'h:1', maxRunningQueries: 1, credentials: {password: '${file:/missing}'}}]\n"))
	_, err = ResolveSecrets(cfg, refSource, "")
	if !errors.As(err, &errs) || len(errs) != 2 || errs[0].Path != "queryflux.adminApi.token" || errs[1].Path != "clusters[0].credentials.password" ||
		!strings.Contains(errs[0].Message, "NOPE") || !strings.Contains(errs[1].Message, "/missing") {
		t.Fatalf("errors: %v", err)
	}
}

// TestResolveRefsLeavesOtherTextAlone: text without a reference comes back unchanged.
func TestResolveRefsLeavesOtherTextAlone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringMatching(`[^$]*`).Draw(t, "s")
		if got, err := ResolveRefs(s, MapSecrets{}); err != nil || got != s {
			t.Fatalf("%q: %q %v", s, got, err)
		}
	})
}

// TestRedactURLHidesPasswords: whatever the user and password, the password is not in the
// redacted endpoint, and the rest of it is.
func TestRedactURLHidesPasswords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		user := rapid.StringMatching(`[a-z][a-z0-9_.]{0,10}`).Draw(t, "user")
		pw := rapid.StringMatching(`[A-Za-z0-9!$&()*+,;=:@%~._-]{1,20}`).Draw(t, "password")
		host := rapid.StringMatching(`[a-z]{1,8}(:[0-9]{2,5})?`).Draw(t, "host")
		scheme := rapid.SampledFrom([]string{"postgres://", "mysql://", "https://", ""}).Draw(t, "scheme")
		in := scheme + user + ":" + pw + "@" + host + "/db"
		got := RedactURL(in)
		if got != scheme+user+":[redacted]@"+host+"/db" {
			t.Fatalf("RedactURL(%q) = %q", in, got)
		}
		msg := RedactURL("dial " + in + ": connection refused")
		if strings.Contains(msg, ":"+pw+"@") {
			t.Fatalf("in an error message: %q", msg)
		}
	})
	for _, s := range []string{"http://host:8080/x", "db:5432", "user@host", "a:b c@d"} {
		if RedactURL(s) != s && s != "a:b c@d" {
			t.Errorf("RedactURL(%q) = %q: nothing to hide", s, RedactURL(s))
		}
	}
}

func TestRedactOptions(t *testing.T) {
	got := RedactOptions(map[string]string{"sslpassword": "x", "apiToken": "y", "dsn": "u:pw@tcp(h)/d", "applicationName": "qf", "secretKey": ""})
	want := map[string]string{"sslpassword": "[redacted]", "apiToken": "[redacted]", "dsn": "u:[redacted]@tcp(h)/d", "applicationName": "qf", "secretKey": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestIsEmptyDocument(t *testing.T) {
	for _, s := range []string{"", " \n\t", "# comment\n", "null", "~", "---\n"} {
		if !IsEmptyDocument([]byte(s)) {
			t.Errorf("%q should be empty", s)
		}
	}
	for _, s := range []string{"{}", "clusters: []", "a: 1", "[1]", "x"} {
		if IsEmptyDocument([]byte(s)) {
			t.Errorf("%q is not empty", s)
		}
	}
}
