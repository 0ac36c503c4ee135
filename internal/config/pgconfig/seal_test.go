package pgconfig

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/migrations/migratedtest"
)

const sealYAML = `
clusters:
  - name: pg
    engine: postgres
    endpoint: "postgres://app:url-secret-pw@db:5432/app"
    maxRunningQueries: 2
    credentials: {user: app, password: cred-secret-pw, token: cred-secret-token}
    options: {sslpassword: option-secret-pw, applicationName: qf}
    variants:
      etl: {credentials: {user: etl, password: variant-secret-pw}}
  - name: ref
    engine: postgres
    endpoint: "db:5432"
    maxRunningQueries: 2
    credentials: {user: app, password: "${env:QF_TEST_PG_PASSWORD}"}
clusterGroups: [{name: g, members: [pg, ref]}]
routingFallback: g
`

var sealSecrets = []string{"url-secret-pw", "cred-secret-pw", "cred-secret-token", "option-secret-pw", "variant-secret-pw", "resolved-from-env"}

// rawStored is every text the database holds for the configuration, tables and revisions.
func rawStored(t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var all string
	err = conn.QueryRow(context.Background(), `SELECT
		(SELECT coalesce(string_agg(c::text, ' '), '') FROM config_clusters c) ||
		(SELECT coalesce(string_agg(r::text, ' '), '') FROM config_revisions r)`).Scan(&all)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestSecretsSealedAtRest: engine passwords, tokens, a password inside the endpoint and a
// credential option are stored encrypted (in the tables and the revisions), a reference as
// written; reading back with the key gives them all, and the snapshot has the reference resolved.
func TestSecretsSealedAtRest(t *testing.T) {
	url := migratedtest.NewDatabase(t)
	env := config.MapSecrets{Env: map[string]string{"QF_TEST_PG_PASSWORD": "resolved-from-env"}}
	src, err := Open(context.Background(), url, Options{Key: testKey(t), Secrets: env})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cfg, err := config.Parse([]byte(sealYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Import(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	raw := rawStored(t, url)
	for _, s := range sealSecrets {
		if strings.Contains(raw, s) {
			t.Errorf("the database holds %q in clear", s)
		}
	}
	if !strings.Contains(raw, sealPrefix+testKey(t).ID()) || !strings.Contains(raw, "${env:QF_TEST_PG_PASSWORD}") || !strings.Contains(raw, "applicationName") {
		t.Fatalf("stored form: %s", raw)
	}
	snap, err := src.Snapshot(context.Background(), config.QueryFlux{}, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]snapshot.Cluster{}
	for _, c := range snap.Clusters {
		byName[c.Name] = c
	}
	if byName["pg"].Credentials.Password != "cred-secret-pw" || byName["pg::etl"].Credentials.Password != "variant-secret-pw" ||
		byName["pg"].Endpoint != "postgres://app:url-secret-pw@db:5432/app" || byName["pg"].Options["sslpassword"] != "option-secret-pw" ||
		byName["ref"].Credentials.Password != "resolved-from-env" {
		t.Fatalf("read back: %+v", snap.Clusters)
	}

	// Without the key, or with another one, reading fails and says which key is needed.
	other, _ := ParseKey(strings.Repeat("ee", KeyBytes))
	for _, opts := range []Options{{Secrets: env}, {Key: other, Secrets: env}} {
		s2, _ := Open(context.Background(), url, opts)
		_, err := s2.Snapshot(context.Background(), config.QueryFlux{}, snapshot.Options{})
		s2.Close()
		if err == nil || !strings.Contains(err.Error(), testKey(t).ID()) || strings.Contains(err.Error(), "secret-pw") {
			t.Fatalf("key %v: %v", opts.Key, err)
		}
	}
	// Without a key a literal secret is refused, naming where it is; a reference is fine.
	s3, _ := Open(context.Background(), migratedtest.NewDatabase(t), Options{Secrets: env})
	defer s3.Close()
	err = s3.Update(context.Background(), func(c *config.Config) error { *c = *config.Clone(cfg); return nil })
	var errs config.Errors
	if !errors.As(err, &errs) || errs[0].Path != "clusters[0].endpoint" || !strings.Contains(err.Error(), "configKey") || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("literal secrets without a key: %v", err)
	}
	// A missing variable is named, never a value.
	s4, _ := Open(context.Background(), url, Options{Key: testKey(t), Secrets: config.MapSecrets{}})
	defer s4.Close()
	if _, err := s4.Snapshot(context.Background(), config.QueryFlux{}, snapshot.Options{}); err == nil || !strings.Contains(err.Error(), "QF_TEST_PG_PASSWORD is not set") {
		t.Fatalf("missing variable: %v", err)
	}
}

// TestSealRoundTrip: any value seals to something that does not contain it and opens to it;
// a reference is stored as written.
func TestSealRoundTrip(t *testing.T) {
	k := testKey(t)
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.StringMatching(`[ -~]{4,40}`).Draw(t, "value")
		sealed, err := k.seal(v)
		if err != nil {
			t.Fatal(err)
		}
		if isReferenceOnly(v) {
			if sealed != v {
				t.Fatalf("reference %q stored as %q", v, sealed)
			}
			return
		}
		if strings.Contains(sealed, v) {
			t.Fatalf("sealed %q holds it: %q", v, sealed)
		}
		if got, err := k.open(sealed); err != nil || got != v {
			t.Fatalf("open: %q %v", got, err)
		}
	})
	for _, ref := range []string{"${env:X}", "${file:/run/s}", "${env:A}${env:B}"} {
		if got, err := (*Key)(nil).seal(ref); err != nil || got != ref {
			t.Fatalf("reference %q without a key: %q %v", ref, got, err)
		}
	}
}
