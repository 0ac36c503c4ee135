package querynode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// TestCheckEngines: a DuckDB file in a missing directory, a directory in place of the file and
// an unresolvable reference are reported with the cluster's path; files that exist or can be
// created, memory databases and network engines pass.
func TestCheckEngines(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "there.duckdb")
	if err := os.WriteFile(existing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Clusters: []config.Cluster{
		{Name: "mem", Engine: config.EngineDuckDB},
		{Name: "memory", Engine: config.EngineDuckDB, Endpoint: ":memory:"},
		{Name: "there", Engine: config.EngineDuckDB, Endpoint: existing},
		{Name: "new", Engine: config.EngineDuckDB, Endpoint: filepath.Join(dir, "new.duckdb")},
		{Name: "pg", Engine: config.EnginePostgres, Endpoint: "db:5432"},
		{Name: "missing", Engine: config.EngineDuckDB, Endpoint: filepath.Join(dir, "no", "such", "x.duckdb")},
		{Name: "isdir", Engine: config.EngineDuckDB, Endpoint: dir},
		{Name: "variant", Engine: config.EngineDuckDB, Variants: map[string]config.ClusterOverrides{"v": {Endpoint: ptr(filepath.Join(dir, "gone", "v.duckdb"))}}},
	}}
	err := CheckEngines(context.Background(), cfg, config.MapSecrets{})
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("CheckEngines: %v", err)
	}
	for i, want := range []string{"clusters[5].endpoint: DuckDB database", "clusters[6].endpoint: DuckDB database", `clusters[7].variants.v.endpoint`} {
		if !strings.HasPrefix(errs[i].Error(), want) {
			t.Errorf("error %d: %q, want prefix %q", i, errs[i].Error(), want)
		}
	}
	if !strings.Contains(errs[0].Message, "does not exist") || !strings.Contains(errs[1].Message, "is a directory") {
		t.Errorf("messages: %v", errs)
	}
	cfg = &config.Config{Clusters: []config.Cluster{{Name: "pg", Engine: config.EnginePostgres, Endpoint: "db:5432",
		Credentials: config.Credentials{Password: "${env:QF_CHECK_MISSING}"}}}}
	if err := CheckEngines(context.Background(), cfg, config.MapSecrets{}); err == nil || !strings.Contains(err.Error(), "QF_CHECK_MISSING") {
		t.Fatalf("unresolvable reference: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
