package duckengine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
)

// TestReadOnlyAccessModeIsRefusedClearly: DuckDB opened with access_mode READ_ONLY refuses the
// in-memory database the client catalogs live in ("Cannot launch in-memory database in
// read-only mode"); the engine says what is not supported and what to do, naming the option.
func TestReadOnlyAccessModeIsRefusedClearly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.duckdb")
	e, err := duckengine.Open(engine.Spec{Name: "rw", Kind: duckengine.Kind, Endpoint: path})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	for _, mode := range []string{"READ_ONLY", "read_only"} {
		_, err := duckengine.Open(engine.Spec{Name: "ro", Kind: duckengine.Kind, Endpoint: path, Options: map[string]string{"access_mode": mode}})
		if err == nil || !strings.Contains(err.Error(), "options.access_mode READ_ONLY is not supported") {
			t.Errorf("access_mode %s: %v, want a refusal naming the option", mode, err)
		}
	}
}
