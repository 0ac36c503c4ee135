package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/freeport"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/querynode"
)

// TestAdminConfigDialCheck runs the daemon's engine dial against real PostgreSQL and MariaDB:
// an edit whose clusters all open is stored; one naming an unreachable PostgreSQL and a
// MariaDB login with a wrong password is refused with those clusters named (and no password),
// by POST /admin/config/check too, and nothing is published; with ?force=true it is stored and
// the problems come back as warnings.
func TestAdminConfigDialCheck(t *testing.T) {
	h, store := newStoredHarness(t)
	h.srv.SetAdminOptions(AdminOptions{Revision: store.Revision, History: store, Rejections: store,
		CheckEngines: func(ctx context.Context, cfg *config.Config) error {
			return querynode.DialEngines(ctx, querynode.Engines(), cfg, config.MapSecrets{}, 3*time.Second)
		}})
	pgURL, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	myDSN, myDB := mytest.NewDatabase(t)
	my, err := mysql.ParseDSN(myDSN)
	if err != nil {
		t.Fatal(err)
	}
	down := freeport.Closed

	const wrongPassword = "wrong-Dial-pw-5521"
	// Each cluster: its name, then the rest of its YAML flow mapping.
	clusters := [][2]string{
		{"pg", fmt.Sprintf("engine: postgres, endpoint: %q, database: %q, maxRunningQueries: 2, credentials: {user: %q}",
			pgURL.Host, strings.TrimPrefix(pgURL.Path, "/"), pgURL.User.Username())},
		{"my", fmt.Sprintf("engine: mysql, endpoint: %q, database: %q, maxRunningQueries: 2, credentials: {user: %q, password: %q}",
			my.Addr, myDB, my.User, my.Passwd)},
	}
	doc := func(clusters [][2]string) string {
		var b strings.Builder
		names := []string{}
		b.WriteString("clusters:\n")
		for _, c := range clusters {
			fmt.Fprintf(&b, "  - {name: %s, %s}\n", c[0], c[1])
			names = append(names, c[0])
		}
		fmt.Fprintf(&b, "clusterGroups: [{name: g, members: [%s]}]\nroutingFallback: g\n", strings.Join(names, ", "))
		return b.String()
	}
	if code, _, a, body := h.put(PathAdminConfig, doc(clusters), nil); code != http.StatusOK || len(a.Warnings) != 0 {
		t.Fatalf("PUT of reachable engines: %d %s", code, body)
	}
	before := h.srv.Current().Revision

	bad := doc(append(clusters,
		[2]string{"pg-down", fmt.Sprintf("engine: postgres, endpoint: %q, maxRunningQueries: 1, credentials: {user: postgres, password: %q}", down, wrongPassword)},
		[2]string{"my-badpw", fmt.Sprintf("engine: mysql, endpoint: %q, maxRunningQueries: 1, credentials: {user: %q, password: %q}", my.Addr, my.User, wrongPassword)}))
	code, _, a, body := h.put(PathAdminConfig, bad, nil)
	if code != http.StatusUnprocessableEntity || len(a.Errors) != 2 {
		t.Fatalf("PUT of unreachable engines: %d %s", code, body)
	}
	for i, want := range []struct{ path, name, why string }{
		{"clusters[2]", "pg-down", "connection refused"},
		{"clusters[3]", "my-badpw", "Access denied"},
	} {
		e := a.Errors[i]
		if e.Path != want.path || !strings.Contains(e.Message, `"`+want.name+`"`) || !strings.Contains(e.Message, want.why) {
			t.Errorf("error %d: %+v, want %s naming %s and %q", i, e, want.path, want.name, want.why)
		}
	}
	if strings.Contains(body, wrongPassword) {
		t.Errorf("the answer shows a password: %s", body)
	}
	if code, body := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", bad); code != http.StatusUnprocessableEntity || !strings.Contains(body, "pg-down") {
		t.Errorf("check: %d %s", code, body)
	}
	if h.srv.Current().Revision != before {
		t.Fatal("a refused configuration was published")
	}

	code, _, a, body = h.put(PathAdminConfig+"?force=true", bad, nil)
	if code != http.StatusOK || len(a.Warnings) != 2 || a.Warnings[0].Path != "clusters[2]" {
		t.Fatalf("forced PUT: %d %s", code, body)
	}
	if strings.Contains(body, wrongPassword) {
		t.Errorf("the forced answer shows a password: %s", body)
	}
	if h.srv.Current().Revision == before {
		t.Fatal("the forced configuration was not published")
	}
}
