package defaultconfig

import (
	"os"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

func TestDefaultIsValidStandaloneOnLoopback(t *testing.T) {
	cfg, err := Load(0)
	if err != nil {
		t.Fatal(err)
	}
	if errs := config.Validate(cfg); len(errs) > 0 {
		t.Fatalf("embedded default invalid: %v", errs)
	}
	if err := config.Compile(cfg); err != nil {
		t.Fatalf("embedded default does not compile: %v", err)
	}
	q := cfg.QueryFlux
	if q.Role != config.RoleStandalone {
		t.Fatalf("role %q", q.Role)
	}
	want := map[string]string{
		"postgres": "127.0.0.1:15432", "mysql": "127.0.0.1:13306", "trino": "127.0.0.1:18080",
		"flightsql": "127.0.0.1:18815", "admin": "127.0.0.1:19000",
	}
	got := map[string]string{
		"postgres": q.Frontends.Postgres.Listen, "mysql": q.Frontends.MySQL.Listen, "trino": q.Frontends.Trino.Listen,
		"flightsql": q.Frontends.FlightSQL.Listen, "admin": q.AdminAPI.Listen,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s listens on %q, want %q", k, got[k], v)
		}
	}
	if !q.Frontends.Postgres.Enabled || !q.Frontends.MySQL.Enabled || !q.Frontends.Trino.Enabled || !q.Frontends.FlightSQL.Enabled {
		t.Errorf("every frontend should be enabled: %+v", q.Frontends)
	}
	if len(cfg.Clusters) != 1 || cfg.Clusters[0].Engine != config.EngineDuckDB || cfg.Clusters[0].Options[OptionDataset] != DatasetDemo {
		t.Fatalf("want one DuckDB demo cluster, got %+v", cfg.Clusters)
	}
}

func TestPortOffsetShiftsEveryListener(t *testing.T) {
	cfg, err := Load(100)
	if err != nil {
		t.Fatal(err)
	}
	q := cfg.QueryFlux
	for _, got := range []struct{ addr, want string }{
		{q.Frontends.Postgres.Listen, "127.0.0.1:15532"}, {q.Frontends.MySQL.Listen, "127.0.0.1:13406"},
		{q.Frontends.Trino.Listen, "127.0.0.1:18180"}, {q.Frontends.FlightSQL.Listen, "127.0.0.1:18915"},
		{q.AdminAPI.Listen, "127.0.0.1:19100"},
	} {
		if got.addr != got.want {
			t.Errorf("got %q want %q", got.addr, got.want)
		}
	}
	if _, err := Load(60000); err == nil {
		t.Fatal("an offset beyond port 65535 should fail")
	}
}

func TestAdminURLAndTokenFollowTheEmbeddedDefault(t *testing.T) {
	t.Setenv("QUERYFLUX_PORT_OFFSET", "7")
	t.Setenv("QUERYFLUX_ADMIN_TOKEN", "")
	t.Setenv("TMPDIR", t.TempDir())
	if got := AdminURL(); got != "http://127.0.0.1:19007" {
		t.Fatalf("AdminURL() = %q", got)
	}
	if got := AdminToken(AdminURL()); got != "" {
		t.Fatalf("no token file, no env: got %q", got)
	}
	if err := os.WriteFile(TokenFile("19007"), []byte("tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := AdminToken(AdminURL()); got != "tok-from-file" {
		t.Fatalf("token file: got %q", got)
	}
	if got := AdminToken("http://127.0.0.1:19008"); got != "" {
		t.Fatalf("another port's admin API got this port's token: %q", got)
	}
	t.Setenv("QUERYFLUX_ADMIN_TOKEN", "tok-from-env")
	if got := AdminToken(AdminURL()); got != "tok-from-env" {
		t.Fatalf("QUERYFLUX_ADMIN_TOKEN must win: got %q", got)
	}
}
