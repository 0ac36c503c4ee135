package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// TestLogScrub: every secret of a configuration is hidden in log lines, text and JSON, even when
// it arrives as a plain string inside an error; ordinary text and short values are left alone.
func TestLogScrub(t *testing.T) {
	cfg, err := config.Parse([]byte(`
queryflux: {adminApi: {token: admin-tok-123456}, persistence: {databaseUrl: "postgres://qf:db-pw-98765@db/qf"}}
clusters:
  - name: pg
    engine: postgres
    endpoint: "postgres://app:url-pw-4567@db:5432/app"
    maxRunningQueries: 1
    credentials: {user: app, password: 'eng"pw\42'}
    options: {sslpassword: opt-pw-2468, applicationName: qflux-app}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		var out bytes.Buffer
		s := &scrubWriter{}
		log, err := logFlags{level: "debug", format: format}.logger(s.to(&out))
		if err != nil {
			t.Fatal(err)
		}
		s.add(configSecrets(cfg)...)
		log.Error("engine failed", "err", errors.New(`dial postgres://app:url-pw-4567@db: password "eng"pw\42" refused`),
			"token", "admin-tok-123456", "db", "db-pw-98765", "opt", "opt-pw-2468", "app", "qflux-app")
		line := out.String()
		for _, secret := range []string{"admin-tok-123456", "url-pw-4567", `eng"pw\42`, `eng\"pw\\42`, "db-pw-98765", "opt-pw-2468"} {
			if strings.Contains(line, secret) {
				t.Errorf("%s log shows %q: %s", format, secret, line)
			}
		}
		if !strings.Contains(line, "qflux-app") || !strings.Contains(line, "[redacted]") {
			t.Errorf("%s log: %s", format, line)
		}
	}
}
