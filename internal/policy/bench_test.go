package policy

import (
	"context"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkCheck is the per-query cost of the policy: access rules, one guard script and one
// translation script.
func BenchmarkCheck(b *testing.B) {
	c, err := Compile(cfgWith(func(cfg *config.Config) {
		cfg.Settings.AccessControl.Rules = []config.AccessRule{{Roles: []string{"analyst"}, Groups: []string{"dev"}, Effect: config.EffectAllow}}
		cfg.Settings.GuardScripts = []config.Script{{Name: "g", Source: "def guard(q, ctx):\n    return 'drop' not in q['sql'].lower()\n"}}
		cfg.Translation = config.Translation{Mode: config.TranslationScripts, Scripts: []config.Script{{Name: "t", Source: limitToTop}}}
	}))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := &query.Request{User: "alice", SQL: "select top 3 x from t", Protocol: "trino"}
		if err := c.Check(req, "dev"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrinoBasicBcrypt is a Trino request's login with a bcrypt user: Trino clients send
// Basic credentials on every poll, so all but the first are answered from the login cache.
func BenchmarkTrinoBasicBcrypt(b *testing.B) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.DefaultCost)
	p := New(nil)
	if err := p.Apply(cfgWith(func(cfg *config.Config) {
		cfg.Settings.Security.Users = []config.User{{Name: "u", PasswordHash: string(h)}}
	})); err != nil {
		b.Fatal(err)
	}
	auth := p.Trino()
	for b.Loop() {
		if _, err := auth.Authenticate(context.Background(), trinohttp.Credentials{User: "u", Password: "pw"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBcryptUncached is what every request would cost without the login cache.
func BenchmarkBcryptUncached(b *testing.B) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.DefaultCost)
	for b.Loop() {
		if !CheckPassword(string(h), "pw") {
			b.Fatal("refused")
		}
	}
}

// BenchmarkWrongPassword compares a wrong password of a bcrypt user with any password of a
// name no user has: the two cost the same (the unknown name is checked against a decoy hash),
// so timing does not tell which names exist.
func BenchmarkWrongPassword(b *testing.B) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.DefaultCost)
	p := New(nil)
	if err := p.Apply(cfgWith(func(cfg *config.Config) {
		cfg.Settings.Security.Users = []config.User{{Name: "u", PasswordHash: string(h)}}
	})); err != nil {
		b.Fatal(err)
	}
	for _, user := range []string{"u", "nobody"} {
		b.Run(user, func(b *testing.B) {
			for b.Loop() {
				if p.Postgres().CheckPassword(user, "wrong") {
					b.Fatal("accepted")
				}
			}
		})
	}
}
