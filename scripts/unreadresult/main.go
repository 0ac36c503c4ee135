// Command unreadresult is a hostile client of the MySQL or PostgreSQL frontend: it opens
// -clients connections, starts a large result on each, reads only its first bytes and never the
// rest, and holds the connections for -hold. It prints the proxy's RSS (-pid) every second, so
// that what a client that never reads costs the proxy can be read off (docs/security.md).
//
//	go run ./scripts/unreadresult -proto mysql -addr 127.0.0.1:3806 -pid $(pgrep ...) -clients 4
package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

func main() {
	proto := flag.String("proto", "mysql", "mysql or postgres")
	addr := flag.String("addr", "127.0.0.1:3306", "the frontend's address")
	pid := flag.Int("pid", 0, "the proxy's process id (RSS printed every second)")
	clients := flag.Int("clients", 4, "connections that never read their result")
	hold := flag.Duration("hold", 90*time.Second, "how long to hold them")
	rows := flag.Int("rows", 2000000, "rows of 1000 bytes asked for on each")
	flag.Parse()
	ctx := context.Background()
	for i := 0; i < *clients; i++ {
		switch *proto {
		case "mysql":
			db, err := sql.Open("mysql", "u"+fmt.Sprint(i)+"@tcp("+*addr+")/")
			if err != nil {
				panic(err)
			}
			db.SetMaxOpenConns(1)
			r, err := db.QueryContext(ctx, fmt.Sprintf("select repeat('x', 1000) from seq_1_to_%d", *rows))
			if err != nil {
				panic(err)
			}
			r.Next() // the first row only: the rest stays unread
		case "postgres":
			c, err := pgx.Connect(ctx, "postgres://u"+fmt.Sprint(i)+"@"+*addr+"/main?sslmode=disable")
			if err != nil {
				panic(err)
			}
			r, err := c.Query(ctx, fmt.Sprintf("select repeat('x', 1000) from generate_series(1, %d)", *rows))
			if err != nil {
				panic(err)
			}
			r.Next()
		}
	}
	start := time.Now()
	for time.Since(start) < *hold {
		fmt.Printf("%5.0fs rss_kb=%s\n", time.Since(start).Seconds(), rss(*pid))
		time.Sleep(time.Second)
	}
}

func rss(pid int) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmRSS:") {
			return strings.Fields(s.Text())[1]
		}
	}
	return "?"
}
