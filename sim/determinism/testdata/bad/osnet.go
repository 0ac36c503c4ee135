package bad

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"os/exec" // want "os/exec"
	"path/filepath"
	"syscall" // want "syscall"
)

// The process, the machine, files and the real network.
func OSNet(ctx context.Context, s *http.Server) {
	_, _ = os.Hostname()           // want "os.Hostname"
	_ = os.Getenv("X")             // want "os.Getenv"
	_ = os.Environ()               // want "os.Environ"
	_, _ = os.ReadFile("x")        // want "os.ReadFile"
	_ = os.Args                    // want "os.Args"
	_ = os.Getppid()               // want "os.Getppid"
	_, _ = os.Stat("x")            // want "os.Stat"
	_ = os.IsNotExist(nil)         // fine: an error test
	_, _ = filepath.Glob("*")      // want "path/filepath.Glob"
	_, _ = net.Dial("tcp", "x:1")  // want "net.Dial"
	_, _ = net.Listen("tcp", ":0") // want "net.Listen"
	_, _ = net.LookupHost("x")     // want "net.LookupHost"
	var d net.Dialer
	_, _ = d.DialContext(ctx, "tcp", "x") // want "net.Dialer.DialContext"
	_, _, _ = net.SplitHostPort("x:1")    // fine: pure
	_ = http.ListenAndServe(":0", nil)    // want "http.ListenAndServe"
	_ = s.Serve(nil)                      // want "net/http.Server.Serve"
	_ = exec.Command("date")
	_ = syscall.Getpid()
	flag.Parse() // want "flag.Parse"
}
