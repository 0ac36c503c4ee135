package historycli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/historytest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// server is a control plane's admin API in miniature: the real Admin handler behind a token.
func server(t *testing.T) *httptest.Server { return serverWith(t, 30) }

// serverWith seeds n records (and one more sharing a start time).
func serverWith(t *testing.T, n int) *httptest.Server {
	m := history.NewMemory(n + 1)
	historytest.Seed(t, m, n)
	admin := history.NewAdmin(m)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, _ := workerapi.BearerToken(r); tok != "adm" {
			workerapi.WriteError(w, http.StatusUnauthorized, "bad admin token", "Authorization")
			return
		}
		admin.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func run(t *testing.T, args ...string) (string, error) {
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestHistoryCommandPrintsFilteredPages(t *testing.T) {
	srv := server(t)
	out, err := run(t, "--admin-url", srv.URL, "--admin-token", "adm", "--worker", "w0", "--status", "failed", "--limit", "2")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "STARTED") || !strings.Contains(lines[1], "q024") || !strings.Contains(lines[2], "q018") || !strings.HasPrefix(lines[3], "more: --before ") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	cursor := strings.TrimPrefix(lines[3], "more: --before ")
	out, err = run(t, "--admin-url", srv.URL, "--admin-token", "adm", "--worker", "w0", "--status", "failed", "--limit", "2", "--before", cursor)
	if err != nil || !strings.Contains(out, "q012") || strings.Contains(out, "q018") {
		t.Fatalf("second page: %v\n%s", err, out)
	}
}

func TestHistoryCommandTokenFromEnvAndJSON(t *testing.T) {
	srv := server(t)
	t.Setenv("QUERYFLUX_ADMIN_TOKEN", "adm")
	out, err := run(t, "--admin-url", srv.URL, "--json", "--user", "nobody")
	if err != nil || !strings.Contains(out, `"records": []`) {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestHistoryCommandErrors(t *testing.T) {
	srv := server(t)
	t.Setenv("QUERYFLUX_ADMIN_TOKEN", "")
	cases := map[string][]string{
		"no admin token":   {"--admin-url", srv.URL},
		"HTTP 401":         {"--admin-url", srv.URL, "--admin-token", "wrong"},
		"--status \"meh\"": {"--admin-url", srv.URL, "--admin-token", "adm", "--status", "meh"},
		"--since":          {"--admin-url", srv.URL, "--admin-token", "adm", "--since", "last week"},
		"--limit":          {"--admin-url", srv.URL, "--admin-token", "adm", "--limit", "0"},
	}
	for want, args := range cases {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want it to mention %q", args, err, want)
		}
	}
}
