package querynode

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/policy"
	"github.com/queryflux/queryflux/node/env"
)

// The node's policy (logins, access, guard scripts) follows every Apply without a restart, and
// a configuration whose script does not compile is refused whole while the old one serves on.
func TestPolicyFollowsApply(t *testing.T) {
	n := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.DiscardHandler))})
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Listen(config.Frontends{Postgres: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}}); err != nil {
		t.Fatal(err)
	}
	withPolicy := func(pw, guard string) *config.Config {
		cfg, err := defaultconfig.Load(0)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Settings.Security.Users = []config.User{{Name: "erin", PasswordHash: policy.NativeHash(pw)}}
		cfg.Settings.Security.TrustLoopback = false
		cfg.Settings.Security.AllowPlaintextPasswords = true // TLS has its own tests (tls_test.go)
		cfg.Settings.GuardScripts = []config.Script{{Name: "g", Source: guard}}
		return cfg
	}
	query := func(pw, q string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://erin:%s@%s/demo?sslmode=disable", pw, n.Addrs()["postgres"]))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var v int
		return conn.QueryRow(ctx, q).Scan(&v)
	}
	denyTwo := "def guard(q, ctx):\n    return None if '2' not in q['sql'] else 'no twos'\n"
	if err := n.Apply(withPolicy("first", denyTwo)); err != nil {
		t.Fatal(err)
	}
	if err := query("first", "select 1"); err != nil {
		t.Fatal(err)
	}
	if err := query("first", "select 2"); err == nil || !strings.Contains(err.Error(), "no twos") {
		t.Fatalf("guard script: %v", err)
	}
	if err := n.Apply(withPolicy("second", "def guard(q, ctx)\n")); err == nil || !strings.Contains(err.Error(), "settings.guardScripts[0].source") {
		t.Fatalf("a broken guard script was accepted: %v", err)
	}
	if err := query("first", "select 1"); err != nil {
		t.Fatalf("after a refused configuration the old policy serves on: %v", err)
	}
	if err := n.Apply(withPolicy("second", "def guard(q, ctx):\n    return True\n")); err != nil {
		t.Fatal(err)
	}
	if err := query("first", "select 1"); err == nil {
		t.Fatal("the old password still logs in")
	}
	if err := query("second", "select 2"); err != nil {
		t.Fatalf("new password and guard: %v", err)
	}
}
