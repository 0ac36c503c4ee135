package configref

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

const docPath = "../../../docs/configuration.md"

// The committed reference is exactly what the code generates.
func TestReferenceMatchesTheModel(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("QUERYFLUX_UPDATE_DOCS") != "" {
		if err := os.WriteFile(docPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/configuration.md differs from the config model: regenerate it with\n" +
			"  QUERYFLUX_UPDATE_DOCS=1 go test ./internal/config/configref/")
	}
}

// Every field of the model has a row: a field added to the Go types without a row would mean
// the walk is broken.
func TestEveryFieldHasARowWithTypeAndDefault(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	doc := string(got)
	for _, row := range []string{
		"| `queryflux.coordination.leaseTtlSecs` | integer | `30` |",
		"| `queryflux.adminApi.token` | secret |",
		"| `clusters[].maxRunningQueries` | integer |",
		"| `clusterGroups[].strategy` | string | `roundRobin` |",
		"| `clusters[].credentials.password` | secret |",
		"| `settings.security.users[].passwordHash` | string |",
		"| `clusters[].variants.*.endpoint` | string |",
	} {
		if !strings.Contains(doc, row) {
			t.Errorf("no row starting %q", row)
		}
	}
}
