package proxy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestRouteByPostgresDatabase: a PostgreSQL wire client's database names the group its
// statements go to, before the routers; other protocols and unknown names route as before.
func TestRouteByPostgresDatabase(t *testing.T) {
	spec := RuntimeSpec{
		Clusters: []ClusterSpec{{Name: "c1", Enabled: true, MaxRunningQueries: 1, Engine: &fakeEngine{}}, {Name: "c2", Enabled: true, MaxRunningQueries: 1, Engine: &fakeEngine{}}},
		Groups: []GroupSpec{{Name: "main", Members: []MemberSpec{{Cluster: "c1"}}},
			{Name: "reporting", Members: []MemberSpec{{Cluster: "c2"}}, PoolMode: PoolModeSession}},
		Fallback: "main",
	}
	rt, err := NewRuntime(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		protocol, database, want string
	}{
		{query.ProtocolPostgres, "reporting", "reporting"},
		{query.ProtocolPostgres, "main", "main"},
		{query.ProtocolPostgres, "other", "main"},
		{query.ProtocolPostgres, "", "main"},
		{query.ProtocolMySQL, "reporting", "main"},
	} {
		d := rt.Route(&query.Request{SQL: "select 1", Protocol: tc.protocol, Database: tc.database})
		if d.Group != tc.want {
			t.Errorf("%s database %q: routed to %q, want %q (trace %+v)", tc.protocol, tc.database, d.Group, tc.want, d.Trace)
		}
	}
	spec.Groups[1].PoolMode = "statement"
	if _, err := NewRuntime(spec); err == nil {
		t.Fatal("pool mode statement accepted")
	}
}
