package mysqlwire

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/mytest"
)

// connectorJJar is MariaDB Connector/J, where Debian's libmariadb-java installs it.
const connectorJJar = "/usr/share/java/mariadb-java-client.jar"

// connectorJClasspath compiles testdata/jdbc/ConnectorJProbe.java against Connector/J and
// returns the class path to run it with; it skips the test where the driver or a JDK is not
// installed (make test-deps installs both), and fails it so under CI.
func connectorJClasspath(t *testing.T) string {
	t.Helper()
	_, errJar := os.Stat(connectorJJar)
	_, errJavac := exec.LookPath("javac")
	if errJar != nil || errJavac != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MariaDB Connector/J (libmariadb-java) or javac (default-jdk-headless) not installed: %v %v", errJar, errJavac)
		}
		t.Skipf("MariaDB Connector/J (libmariadb-java) or javac (default-jdk-headless) not installed: %v %v", errJar, errJavac)
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "-cp", connectorJJar, "testdata/jdbc/ConnectorJProbe.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return connectorJJar + ":" + classes
}

// connectorJCases runs the probe against addr and returns its "case NAME: result" lines by name.
func connectorJCases(t *testing.T, cp, addr, user, password, db, params string) map[string]string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	url := "jdbc:mariadb://" + host + ":" + port + "/" + db + "?user=" + user
	if password != "" {
		url += "&password=" + password
	}
	if params != "" {
		url += "&" + params
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-cp", cp, "ConnectorJProbe", url, db)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ConnectorJProbe against %s: %v\n%s", addr, err, out)
	}
	cases := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(name, "case ") {
			cases[strings.TrimPrefix(name, "case ")] = v
		}
	}
	return cases
}

// TestConnectorJAsMariaDB: MariaDB Connector/J (Debian's 2.7) sees through the proxy what it
// sees from MariaDB itself: prepared statements by text and (useServerPrepStmts=true) binary
// protocol, batches (one with a duplicate key), a fetch size, generated keys, a rolled back
// transaction, DatabaseMetaData's getTables, getColumns, getPrimaryKeys and getIndexInfo,
// parameter metadata and errors; on the relay and with settings.passthrough: false.
func TestConnectorJAsMariaDB(t *testing.T) {
	cp := connectorJClasspath(t)
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fronts := []*coreFixture{coreServer(t, coreSetup{}), coreServer(t, coreSetup{noPassthrough: true})}
	for _, params := range []string{"", "useServerPrepStmts=true", "useServerPrepStmts=true&useCursorFetch=true&defaultFetchSize=2"} {
		direct := connectorJCases(t, cp, cfg.Addr, cfg.User, cfg.Passwd, name, params)
		for i, f := range fronts {
			proxied := connectorJCases(t, cp, f.addr, testUser, "", f.dbName, params)
			for c, want := range direct {
				want = strings.ReplaceAll(want, name, "db")
				if got := strings.ReplaceAll(proxied[c], f.dbName, "db"); got != want {
					t.Errorf("%q, passthrough %v, %s:\n proxy  %s\n direct %s", params, i == 0, c, got, want)
				}
			}
			if len(direct) < 15 || len(proxied) != len(direct) {
				t.Errorf("%q: %d cases direct, %d through the proxy", params, len(direct), len(proxied))
			}
		}
	}
}
