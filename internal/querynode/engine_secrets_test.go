package querynode

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// TestOpenEngineErrorHidesSecrets: a driver that refuses a cluster's settings may quote its
// whole connection string; the error EngineFactory's opener returns (shown by config checks, the admin API
// and a failed start) carries none of the cluster's secrets, in any letter case of option name.
func TestOpenEngineErrorHidesSecrets(t *testing.T) {
	c := config.Cluster{Name: "f", Engine: config.EnginePostgres, Endpoint: "127.0.0.1:5432", MaxRunningQueries: 1,
		Credentials: config.Credentials{User: "u", Password: "CRED-SECRET-1"},
		// sslkey without sslcert: pgx refuses to parse, quoting the connection string.
		Options: map[string]string{"Password": "OPT-SECRET-2", "sslpassword": "OPT SECRET/3", "sslkey": "/nonexistent/k"}}
	_, err := EngineFactory(Engines())(c)
	if err == nil {
		t.Fatal("pgx accepted sslkey without sslcert")
	}
	for _, s := range []string{"CRED-SECRET-1", "OPT-SECRET-2", "OPT SECRET/3", "OPT+SECRET%2F3", "OPT%20SECRET%2F3"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("the error shows %q: %v", s, err)
		}
	}
	if !strings.Contains(err.Error(), "sslcert") {
		t.Fatalf("the error no longer says what was wrong: %v", err)
	}
}
