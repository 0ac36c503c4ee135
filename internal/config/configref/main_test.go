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

// A doc link to a constant prints as its value, computed from the source (a shift, another
// constant, a string); a link to anything else stays as written.
func TestDocLinksToConstantsPrintTheirValue(t *testing.T) {
	_, consts, err := parseSource(configSourceDir())
	if err != nil {
		t.Fatal(err)
	}
	got := substituteConsts("at most [preAuthMessageBytesCeiling], 1 to [WeightMax], [CredentialsEmbedded], [Config]", consts)
	if want := "at most 16777216, 1 to 100, embedded, [Config]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A nested section has its own row, showing its type's comment.
func TestSectionsShowTheirTypeComment(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| `queryflux.coordination` | object |  | Coordination is how a node admits queries",
		"| `clusterGroups[].cache` | object |  |",
		"| `routingFallback` | string |  |",
		"| `clusters[].name` | string |  | Name is unique", // a name has no default
	} {
		if !strings.Contains(string(got), row) {
			t.Errorf("no row starting %q", row)
		}
	}
}

// Every row has a description: a field added without a comment fails here, naming the field.
func TestEveryRowHasADescription(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(got), "\n") {
		if strings.HasPrefix(line, "| `") && strings.HasSuffix(line, "|  |") {
			path, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			t.Errorf("%s has no description: give its Go field a comment in internal/config "+
				"(what it does, unit, allowed values, what 0 or empty means)", path)
		}
	}
}
