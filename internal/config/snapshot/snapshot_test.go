package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../testdata")

var confirmedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fullConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load("../testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func build(t *testing.T, cfg *config.Config, mode CredentialsMode) *WorkerSnapshotV1 {
	t.Helper()
	s, err := Build(cfg, Options{Credentials: mode, ConfirmedAt: confirmedAt})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return s
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "../testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file:\n got %s\nwant %s", name, got, want)
	}
}

// TestGoldenVectors pins the canonical form and the revisions of testdata/full.yaml. A change
// here changes what every worker and control plane computes: bump schemaVersion if intended.
func TestGoldenVectors(t *testing.T) {
	cfg := fullConfig(t)
	embedded := build(t, cfg, Embedded)
	stripped := build(t, cfg, Stripped)
	canon, err := Canonical(embedded)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.canonical.json", append(canon, '\n'))
	golden(t, "full.revisions.txt", fmt.Appendf(nil, "embedded %s\nstripped %s\n", embedded.Revision, stripped.Revision))
	wire, err := Encode(embedded)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, wire, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden(t, "full.snapshot.json", append(pretty.Bytes(), '\n'))

	// The stored wire form decodes to the same snapshot, whitespace and all.
	stored, err := os.ReadFile("../testdata/full.snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := Decode(stored)
	if err != nil {
		t.Fatalf("Decode golden: %v", err)
	}
	if !reflect.DeepEqual(decoded, embedded) {
		t.Fatalf("decoded golden differs:\n%+v\n%+v", decoded, embedded)
	}
	if len(embedded.Revision) != 16 || strings.ToLower(embedded.Revision) != embedded.Revision {
		t.Fatalf("revision %q is not 16 lower-case hex digits", embedded.Revision)
	}
}

func TestSnapshotContent(t *testing.T) {
	s := build(t, fullConfig(t), Embedded)
	var names []string
	for _, c := range s.Clusters {
		names = append(names, c.Name)
	}
	if want := []string{"duck", "pg-1", "trino-1", "trino-1::adhoc"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("clusters %v, want %v (expanded, sorted)", names, want)
	}
	adhoc := s.Clusters[3]
	if adhoc.Credentials.User != "analyst" || adhoc.Credentials.Password != "analyst-pass" || adhoc.MaxRunningQueries != 2 ||
		adhoc.Labels["tier"] != "silver" || adhoc.Labels["site"] != "eu" || !adhoc.Enabled {
		t.Fatalf("variant not expanded: %+v", adhoc)
	}
	if s.Clusters[0].Enabled {
		t.Fatal("disabled cluster shows enabled")
	}
	if s.TranslationFailurePolicy != FailureReject || s.Translation.Mode != config.TranslationScripts {
		t.Fatalf("translation %+v %q", s.Translation, s.TranslationFailurePolicy)
	}
	if s.SchemaVersion != SchemaVersion || !s.ConfirmedAt.Equal(confirmedAt) || s.Credentials != Embedded {
		t.Fatalf("header %d %v %q", s.SchemaVersion, s.ConfirmedAt, s.Credentials)
	}
	// Node-local secrets never reach a worker snapshot.
	wire, _ := Encode(s)
	for _, secret := range []string{"admin-token-123", "worker-secret-456", "pw-789"} {
		if bytes.Contains(wire, []byte(secret)) {
			t.Fatalf("snapshot carries node-local secret %q", secret)
		}
	}
	if !bytes.Contains(wire, []byte("trino-pass")) {
		t.Fatal("embedded snapshot lacks the cluster password")
	}
	if strings.Contains(fmt.Sprintf("%+v", s), "trino-pass") {
		t.Fatal("printing a snapshot shows a password")
	}
}

func TestStrippedCarriesNoCredentials(t *testing.T) {
	s := build(t, fullConfig(t), Stripped)
	wire, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"trino-pass", "analyst-pass"} {
		if bytes.Contains(wire, []byte(secret)) {
			t.Fatalf("stripped snapshot carries %q", secret)
		}
	}
	if s.Clusters[2].Credentials.User != "etl" {
		t.Fatal("stripped snapshot lost the user name")
	}
	if s.Revision == build(t, fullConfig(t), Embedded).Revision {
		t.Fatal("stripped and embedded snapshots share a revision")
	}
}

func TestConfirmedAtIsNotContent(t *testing.T) {
	cfg := fullConfig(t)
	a := build(t, cfg, Embedded)
	b, err := Build(cfg, Options{ConfirmedAt: confirmedAt.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Revision != b.Revision {
		t.Fatal("confirmedAt changed the revision")
	}
}

func TestBuildRejectsInvalidConfig(t *testing.T) {
	cfg := fullConfig(t)
	cfg.RoutingFallback = "nowhere"
	_, err := Build(cfg, Options{})
	var errs config.Errors
	if !errors.As(err, &errs) || errs[0].Path != "routingFallback" {
		t.Fatalf("want a routingFallback error, got %v", err)
	}
}

func TestSnapshotToConfigCompilesAndRebuildsSameRevision(t *testing.T) {
	s := build(t, fullConfig(t), Embedded)
	local := config.QueryFlux{Role: config.RoleWorker, ControlPlane: config.ControlPlane{URL: "http://cp:9000", Secret: "s"}}
	cfg := s.Config(&local)
	if err := config.Compile(cfg); err != nil {
		t.Fatalf("worker config does not compile:\n%v", err)
	}
	again := build(t, cfg, Embedded)
	if again.Revision != s.Revision {
		t.Fatalf("rebuilding from a snapshot's config changed the revision: %s != %s", again.Revision, s.Revision)
	}
	if cfg.Clusters[3].Credentials.Password.Reveal() != "analyst-pass" {
		t.Fatal("credentials lost on the way back to a config")
	}
}

func TestDecodeRejects(t *testing.T) {
	wire, err := Encode(build(t, fullConfig(t), Embedded))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(wire, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"schemaVersion 2":       {edit(func(m map[string]any) { m["schemaVersion"] = 2 }), "unsupported schemaVersion 2"},
		"schemaVersion missing": {edit(func(m map[string]any) { delete(m, "schemaVersion") }), "unsupported schemaVersion missing"},
		"unknown field":         {edit(func(m map[string]any) { m["extra"] = 1 }), `unknown field "extra"`},
		"tampered content":      {edit(func(m map[string]any) { m["routingFallback"] = "oltp" }), "does not match the content"},
		"bad credentials mode":  {edit(func(m map[string]any) { m["credentials"] = "some" }), "unknown credentials mode"},
		"not json":              {[]byte("{"), "unexpected end of JSON input"},
	} {
		_, err := Decode(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
	_, err = Decode(edit(func(m map[string]any) { m["schemaVersion"] = 2 }))
	if !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("want ErrSchemaVersion, got %v", err)
	}
}

func TestCanonicalForm(t *testing.T) {
	got, err := CanonicalJSON([]byte(`{"b": [1.0, 2.5, "x<y"], "revision": "r", "confirmedAt": "t",
		"a": {"z": null, "y": [], "x": {}, "w": false, "v": 1e2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"v":100,"w":false},"b":[1,2.5,"x<y"]}`; string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}
