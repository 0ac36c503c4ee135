package config

import (
	"strings"
	"testing"
)

// TestAdminTokenIsNotTheWorkerSecret: a control plane whose admin token is its worker secret
// (one value pasted twice) was accepted (`queryflux config check`: ok); every worker host holds
// that secret, and could then PUT /admin/config. The configuration is refused, naming the
// setting and not the value; distinct values pass.
func TestAdminTokenIsNotTheWorkerSecret(t *testing.T) {
	doc := func(admin, worker, cp string) string {
		return `queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:0", token: "` + admin + `"}
  workerApi: {enabled: true, secret: "` + worker + `"}
  controlPlane: {secret: "` + cp + `"}
clusters:
  d: {engine: duckdb, endpoint: ":memory:", maxRunningQueries: 1}
clusterGroups: [{name: g, members: [d]}]
routingFallback: g
`
	}
	for _, c := range []struct {
		name, admin, worker, cp string
		refused                 bool
	}{
		{"admin token = worker API secret", "one-value-pasted-twice", "one-value-pasted-twice", "", true},
		{"admin token = controlPlane secret", "one-value-pasted-twice", "other-worker-secret", "one-value-pasted-twice", true},
		{"distinct", "admin-token-value-1", "worker-secret-value-2", "", false},
	} {
		cfg, err := Parse([]byte(doc(c.admin, c.worker, c.cp)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		errs := Validate(cfg)
		var named *FieldError
		for i := range errs {
			if errs[i].Path == "queryflux.adminApi.token" {
				named = &errs[i]
			}
		}
		switch {
		case c.refused && named == nil:
			t.Errorf("%s: %v, want queryflux.adminApi.token refused", c.name, errs)
		case !c.refused && named != nil:
			t.Errorf("%s: %v", c.name, named)
		case named != nil && strings.Contains(named.Error(), c.admin):
			t.Errorf("%s: the refusal shows the secret: %v", c.name, named)
		}
	}
}
