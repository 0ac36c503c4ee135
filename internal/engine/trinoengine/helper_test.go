package trinoengine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/mytest"
)

// The Trino engine is tested against a real Trino-protocol server in another process: this
// test binary re-executed as a trinohttp frontend over MariaDB.
const (
	helperDSNEnv        = "QF_TRINO_HELPER_DSN"
	helperReadyAfterEnv = "QF_TRINO_HELPER_READY_AFTER"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(helperDSNEnv); dsn != "" {
		runHelper(dsn)
		return
	}
	os.Exit(m.Run())
}

// runHelper serves the Trino protocol until its stdin closes.
func runHelper(dsn string) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	eng, err := mysqlengine.Open(mysqlengine.Config{Name: "helper", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: cfg.DBName})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	backend := frontendtest.NewBackend(eng)
	if d, err := time.ParseDuration(os.Getenv(helperReadyAfterEnv)); err == nil && d > 0 {
		backend.SetReady(false)
		time.AfterFunc(d, func() { backend.SetReady(true) })
	}
	srv, err := trinohttp.NewServer(backend, trinohttp.Options{PageRows: 500, PollWait: 200 * time.Millisecond})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	go srv.Serve(l)
	fmt.Println("ADDR", l.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

// startHelper runs the helper process on a fresh MariaDB database and returns its base URL.
func startHelper(t testing.TB, readyAfter time.Duration) (url, dbName string) {
	t.Helper()
	dsn, name := mytest.NewDatabase(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperDSNEnv+"="+dsn, helperReadyAfterEnv+"="+readyAfter.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("helper: %q %v", line, err)
	}
	return "http://" + strings.TrimSpace(strings.TrimPrefix(line, "ADDR ")), name
}
