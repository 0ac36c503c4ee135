package main

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/freeport"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// `queryflux config check --dial FILE` opens the engines as a control plane does before it
// accepts an edit: a PostgreSQL cluster on an address where nothing listens is named with the
// reason (and without its password), while the same file passes without --dial and a file of
// reachable engines passes with it.
func TestConfigCheckDial(t *testing.T) {
	pg, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	down := freeport.Closed
	const password = "check-Dial-pw-0417"
	write := func(clusters ...string) string {
		var b strings.Builder
		b.WriteString("clusters:\n")
		for _, c := range clusters {
			b.WriteString("  - " + c + "\n")
		}
		b.WriteString("clusterGroups: [{name: g, members: [good]}]\nroutingFallback: g\n")
		file := filepath.Join(t.TempDir(), "qf.yaml")
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	good := fmt.Sprintf("{name: good, engine: postgres, endpoint: %q, database: %q, maxRunningQueries: 1, credentials: {user: %q}}",
		pg.Host, strings.TrimPrefix(pg.Path, "/"), pg.User.Username())
	bad := fmt.Sprintf("{name: down, engine: postgres, endpoint: %q, maxRunningQueries: 1, credentials: {user: postgres, password: %q}}", down, password)
	run := func(args ...string) (string, error) {
		cmd := newConfigCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"check"}, args...))
		err := cmd.Execute()
		return out.String(), err
	}

	both := write(good, bad)
	out, err := run("--dial", both)
	if err == nil || !strings.Contains(out, `clusters[1]: cluster "down"`) || !strings.Contains(out, "connection refused") {
		t.Fatalf("--dial with an unreachable engine: err %v, output:\n%s", err, out)
	}
	if strings.Contains(out, "clusters[0]") || strings.Contains(out, password) {
		t.Fatalf("--dial reported the reachable cluster or a password:\n%s", out)
	}
	if out, err := run(both); err != nil {
		t.Fatalf("without --dial the file is valid: %v\n%s", err, out)
	}
	if out, err := run("--dial", write(good)); err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("--dial with reachable engines: %v\n%s", err, out)
	}
}
