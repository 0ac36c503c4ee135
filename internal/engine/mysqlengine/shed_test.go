package mysqlengine

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestADialRefusedForTheLimitWaitsForAConnectionClosedElsewhere: MariaDB caps the engine's
// user at one connection (MAX_USER_CONNECTIONS 1) and another client holds it, nothing of the
// engine's idle to shed. That client leaving a moment later lets the engine's statement run:
// it is not refused at once for a limit that is about to have room (a health check's own
// connection, closed just before, failed a client's login this way).
func TestADialRefusedForTheLimitWaitsForAConnectionClosedElsewhere(t *testing.T) {
	cfg, name := testDatabase(t)
	root, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	user, password := "qfs_"+name[len(name)-12:], "one-connection"
	if _, err := root.Exec(fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s' WITH MAX_USER_CONNECTIONS 1", user, password)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = root.Exec(fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
	if _, err := root.Exec(fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", name, user)); err != nil {
		t.Fatal(err)
	}

	capped := mysql.NewConfig()
	capped.Net, capped.Addr, capped.User, capped.Passwd, capped.DBName = "tcp", cfg.Addr, user, password, name
	other, err := sql.Open("mysql", capped.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Ping(); err != nil {
		t.Fatal(err)
	}
	e, err := Open(Config{Name: "capped", Addr: cfg.Addr, User: user, Password: password, Database: name, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })

	time.AfterFunc(200*time.Millisecond, func() { other.Close() })
	if tag := exec(t, e, "SELECT 1"); tag == "" {
		t.Fatal("SELECT 1 answered no tag")
	}
}
