package policy

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/policy/starhost"
	"github.com/queryflux/queryflux/internal/query"
)

func TestCheckPasswordEveryHashForm(t *testing.T) {
	scram, err := SCRAMHash("s3cret", []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	// Our verifier is byte for byte what pgwire (and PostgreSQL) computes.
	pgv, _ := pgwire.NewSCRAMVerifier("s3cret", []byte("0123456789abcdef"), 4096)
	if scram != pgv {
		t.Fatalf("SCRAM verifier differs from pgwire's:\n%s\n%s", scram, pgv)
	}
	bc, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	// MySQL's PASSWORD('s3cret') / mysql_native_password hash, from MariaDB itself.
	const native = "*B865CAE8F340F6CE1485A06F4492BB49718DF1EC"
	if NativeHash("s3cret") != native {
		t.Fatalf("NativeHash: %s, MariaDB says %s", NativeHash("s3cret"), native)
	}
	for _, h := range []string{scram, string(bc), NativeHash("s3cret")} {
		if !CheckPassword(h, "s3cret") {
			t.Errorf("%s: the right password is refused", HashKind(h))
		}
		if CheckPassword(h, "s3cret ") || CheckPassword(h, "") {
			t.Errorf("%s: a wrong password is accepted", HashKind(h))
		}
	}
	if CheckPassword("s3cret", "s3cret") || CheckPassword(native[:20], "s3cret") {
		t.Fatal("a malformed hash accepted a password")
	}
}

// The native scramble check accepts exactly what a client computes from the right password.
func TestNativeScrambleProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pw := rapid.StringN(0, 30, -1).Draw(t, "pw")
		other := rapid.StringN(0, 30, -1).Draw(t, "other")
		salt := rapid.SliceOfN(rapid.Byte(), 20, 20).Draw(t, "salt")
		stage2 := NativeStage2(pw)
		if !CheckNativeScramble(stage2[:], salt, clientScramble(other, salt)) != (pw != other) {
			t.Fatalf("pw %q other %q: scramble check disagrees", pw, other)
		}
	})
}

// clientScramble is what a MySQL client sends: SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))).
func clientScramble(pw string, salt []byte) []byte {
	s1 := sha1Sum([]byte(pw))
	s2 := sha1Sum(s1)
	mix := sha1Sum(append(append([]byte(nil), salt...), s2...))
	out := make([]byte, len(s1))
	for i := range out {
		out[i] = s1[i] ^ mix[i]
	}
	return out
}

func cfgWith(mut func(*config.Config)) *config.Config {
	cfg := &config.Config{}
	cfg.Translation.Mode = config.TranslationOff
	cfg.Clusters = []config.Cluster{{Name: "pg", Engine: config.EnginePostgres}, {Name: "duck", Engine: config.EngineDuckDB}}
	cfg.ClusterGroups = []config.ClusterGroup{{Name: "prod", Members: []string{"pg"}}, {Name: "dev", Members: []string{"duck"}}}
	cfg.Settings.Security.Users = []config.User{
		{Name: "alice", PasswordHash: NativeHash("a"), Roles: []string{"analyst"}},
		{Name: "bob", PasswordHash: NativeHash("b"), Roles: []string{"intern"}},
	}
	mut(cfg)
	return cfg
}

func mustCompile(t *testing.T, cfg *config.Config) *Compiled {
	t.Helper()
	c, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func code(err error) string {
	var qe *query.Error
	if errors.As(err, &qe) {
		return qe.Code
	}
	if err != nil {
		return "?" + err.Error()
	}
	return ""
}

func TestAccessRules(t *testing.T) {
	c := mustCompile(t, cfgWith(func(cfg *config.Config) {
		cfg.Settings.AccessControl.Rules = []config.AccessRule{
			{Roles: []string{"intern"}, Groups: []string{"prod"}, Effect: config.EffectDeny},
			{Users: []string{"alice"}, Groups: []string{"prod"}, Catalogs: []string{"sales"}},
			{Users: []string{"*"}, Groups: []string{"dev"}},
		}
	}))
	for _, tc := range []struct {
		user, group, catalog string
		want                 string
		byCatalog            string // the catalog the denial names (the catalog decided it)
	}{
		{"bob", "prod", "", query.CodeAccessDenied, ""},          // rule 1: role intern denied
		{"bob", "dev", "", "", ""},                               // rule 3
		{"alice", "prod", "sales", "", ""},                       // rule 2
		{"alice", "prod", "hr", query.CodeAccessDenied, "hr"},    // no rule: denied; rule 2 would allow sales
		{"alice", "prod", "", query.CodeAccessDenied, ""},        // rule 2 names catalogs; none given
		{"mallory", "dev", "", "", ""},                           // "*"
		{"mallory", "prod", "", query.CodeAccessDenied, ""},      // nothing matches
		{"mallory", "prod", "sales", query.CodeAccessDenied, ""}, // nothing matches whatever the catalog
	} {
		err := c.Check(&query.Request{User: tc.user, Database: tc.catalog, SQL: "select 1"}, tc.group)
		if code(err) != tc.want {
			t.Errorf("%s on %s/%s: got %v, want code %q", tc.user, tc.group, tc.catalog, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), tc.group) {
			t.Errorf("denial does not name the group: %v", err)
		}
		var qe *query.Error
		if errors.As(err, &qe) && qe.Catalog != tc.byCatalog { // a MySQL client's USE answers it 1049
			t.Errorf("%s on %s/%s: the denial names catalog %q, want %q", tc.user, tc.group, tc.catalog, qe.Catalog, tc.byCatalog)
		}
	}
	open := mustCompile(t, cfgWith(func(*config.Config) {}))
	if err := open.Check(&query.Request{User: "anyone"}, "prod"); err != nil {
		t.Fatalf("with no rules everything is allowed: %v", err)
	}
}

func TestGuardScripts(t *testing.T) {
	c := mustCompile(t, cfgWith(func(cfg *config.Config) {
		cfg.Settings.GuardScripts = []config.Script{
			{Name: "nodrop", Source: `
def guard(query, ctx):
    if "drop" in query["sql"].lower():
        return "DROP is not allowed on " + ctx["group"]
    return None
`},
			{Name: "interns", Groups: []string{"prod"}, Source: `
def guard(query, ctx):
    return "intern" not in ctx["roles"]
`},
		}
	}))
	for _, tc := range []struct {
		user, group, sql, want string
	}{
		{"alice", "prod", "select 1", ""},
		{"alice", "dev", "DROP TABLE t", "DROP is not allowed on dev"},
		{"bob", "prod", "select 1", "denied by guard script"},
		{"bob", "dev", "select 1", ""}, // the interns guard is for prod only
	} {
		err := c.Check(&query.Request{User: tc.user, SQL: tc.sql}, tc.group)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || code(err) != query.CodeAccessDenied) {
			t.Errorf("%s %s %q: got %v, want %q", tc.user, tc.group, tc.sql, err, tc.want)
		}
	}
}

const loopForever = `
def guard(query, ctx):
    n = 0
    while True:
        n += 1
`

func TestRunawayScriptsStopAtTheStepLimit(t *testing.T) {
	c := mustCompile(t, cfgWith(func(cfg *config.Config) {
		cfg.Settings.GuardScripts = []config.Script{{Name: "spin", Source: loopForever}}
	}))
	err := c.Check(&query.Request{User: "alice", SQL: "select 1"}, "dev")
	if err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "step limit") || !strings.Contains(err.Error(), "settings.guardScripts[0] (spin)") {
		t.Fatalf("a looping guard: got %v, want a step-limit error naming the script", err)
	}
	// A loop at the top level cannot stall compilation either.
	_, err = Compile(cfgWith(func(cfg *config.Config) {
		cfg.Settings.GuardScripts = []config.Script{{Name: "top", Source: "while True:\n    pass\ndef guard(q, c):\n    return True\n"}}
	}))
	if err == nil || !strings.Contains(err.Error(), "step limit") {
		t.Fatalf("top-level loop: %v", err)
	}
	p, err := starhost.Compile("x", "def f():\n    while True:\n        pass\n", "f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(); !errors.Is(err, starhost.ErrStepLimit) {
		t.Fatalf("want ErrStepLimit, got %v", err)
	}
}

const limitToTop = `
def transform(sql, src, dst):
    if dst == "duckdb" and sql.lower().startswith("select top "):
        n = sql.split(" ")[2]
        return "select " + " ".join(sql.split(" ")[3:]) + " limit " + n
    if "unsupported" in sql:
        return None
    return sql
`

func TestTranslationScripts(t *testing.T) {
	for _, strict := range []bool{true, false} {
		c := mustCompile(t, cfgWith(func(cfg *config.Config) {
			cfg.Translation = config.Translation{Mode: config.TranslationScripts, ErrorOnUnsupported: strict, Scripts: []config.Script{
				{Name: "top", Source: limitToTop},
				{Name: "spin", Groups: []string{"prod"}, Source: strings.ReplaceAll(loopForever, "guard(query, ctx)", "transform(sql, src, dst)")},
			}}
		}))
		req := &query.Request{User: "alice", SQL: "select top 3 x from t", Protocol: query.ProtocolTrino}
		if err := c.Check(req, "dev"); err != nil || req.SQL != "select x from t limit 3" {
			t.Fatalf("strict=%v: translated to %q, err %v", strict, req.SQL, err)
		}
		for _, tc := range []struct{ sql, group, why string }{
			{"select unsupported", "dev", "None"},
			{"select 1", "prod", "step limit"},
		} {
			req := &query.Request{User: "alice", SQL: tc.sql}
			err := c.Check(req, tc.group)
			if strict && (code(err) != CodeTranslation || !strings.Contains(err.Error(), tc.why)) {
				t.Errorf("strict: %q on %s: got %v, want a translation error mentioning %q", tc.sql, tc.group, err, tc.why)
			}
			if !strict && (err != nil || req.SQL != tc.sql) {
				t.Errorf("lenient: %q on %s: got %v / %q, want the SQL passed through unchanged", tc.sql, tc.group, err, req.SQL)
			}
		}
	}
	// Mode off: scripts compile but do not run.
	c := mustCompile(t, cfgWith(func(cfg *config.Config) {
		cfg.Translation = config.Translation{Mode: config.TranslationOff, Scripts: []config.Script{{Name: "top", Source: limitToTop}}}
	}))
	req := &query.Request{SQL: "select top 3 x from t"}
	if err := c.Check(req, "dev"); err != nil || req.SQL != "select top 3 x from t" {
		t.Fatalf("mode off rewrote the SQL: %q %v", req.SQL, err)
	}
}

// A snapshot with one bad script is rejected whole by config.Compile, naming each script's path.
func TestBadScriptsRejectTheConfiguration(t *testing.T) {
	cfg := cfgWith(func(cfg *config.Config) {
		cfg.Translation = config.Translation{Mode: config.TranslationScripts, Scripts: []config.Script{
			{Name: "good", Source: limitToTop},
			{Name: "broken", Source: "def transform(sql, src, dst)\n    return sql\n"},
		}}
		cfg.Settings.GuardScripts = []config.Script{{Name: "nofn", Source: "x = 1\n"}}
	})
	_, err := Compile(cfg)
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("want two field errors, got %v", err)
	}
	if errs[0].Path != "translation.scripts[1].source" || !strings.Contains(errs[0].Message, "syntax") && !strings.Contains(errs[0].Message, "got") {
		t.Errorf("first error: %+v", errs[0])
	}
	if errs[1].Path != "settings.guardScripts[0].source" || !strings.Contains(errs[1].Message, "no function guard") {
		t.Errorf("second error: %+v", errs[1])
	}
	// config.Compile compiles the same scripts with the same functions, and says the same.
	cerr := config.Compile(cfg)
	if cerr == nil || !strings.Contains(cerr.Error(), "translation.scripts[1].source") {
		t.Fatalf("config.Compile: %v", cerr)
	}
}

func TestPolicySwapsOnApply(t *testing.T) {
	p := New(nil)
	if p.Postgres().CheckPassword("alice", "a") {
		t.Fatal("before any configuration nobody logs in")
	}
	if err := p.Apply(cfgWith(func(*config.Config) {})); err != nil {
		t.Fatal(err)
	}
	if !p.Postgres().CheckPassword("alice", "a") || p.Postgres().CheckPassword("alice", "b") {
		t.Fatal("alice's password")
	}
	bad := cfgWith(func(cfg *config.Config) { cfg.Settings.GuardScripts = []config.Script{{Name: "x", Source: "("}} })
	if err := p.Apply(bad); err == nil {
		t.Fatal("a bad script was activated")
	}
	if !p.Postgres().CheckPassword("alice", "a") {
		t.Fatal("a rejected configuration replaced the active policy")
	}
	if err := p.Apply(cfgWith(func(cfg *config.Config) { cfg.Settings.Security.Users = nil })); err != nil {
		t.Fatal(err)
	}
	if p.Postgres().CheckPassword("alice", "a") {
		t.Fatal("a removed user still logs in")
	}
}

// The login cache never lets in what the active configuration would refuse.
func TestLoginCacheFollowsTheConfiguration(t *testing.T) {
	p := New(nil)
	apply := func(pw string) {
		t.Helper()
		bc, _ := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err := p.Apply(cfgWith(func(cfg *config.Config) {
			cfg.Settings.Security.Users = []config.User{{Name: "u", PasswordHash: string(bc)}}
		})); err != nil {
			t.Fatal(err)
		}
	}
	ok := func(pw string) bool { return p.Postgres().CheckPassword("u", pw) }
	apply("one")
	if !ok("one") || !ok("one") || ok("two") || ok("one ") {
		t.Fatal("first configuration")
	}
	apply("two")
	if ok("one") || !ok("two") {
		t.Fatal("after a password change the cached login of the old password still works")
	}
}
