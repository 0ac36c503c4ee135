package enginefence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/enginefence"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/node/env"
)

// TestTwoFleetsOnOneServerFenceOnlyTheirOwn: two fleets (two control planes, each with its lease
// store in a database of its own) both have clusters named pg and my, on the one PostgreSQL
// database and the one MariaDB database. Each fleet's first lease of a cluster is "pg#1" (or
// "my#1"). Fleet A's fence of its lease stops A's query and not B's, which runs to its end:
// the lease tags carry each fleet's id, read from its own store.
func TestTwoFleetsOnOneServerFenceOnlyTheirOwn(t *testing.T) {
	ctx := context.Background()
	e := env.Real(nil)
	engineURL, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn, myDB := mytest.NewDatabase(t)
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	clusters := config.NamedList[config.Cluster]{
		{Name: "pg", Engine: config.EnginePostgres, Endpoint: engineURL.Host, Database: strings.TrimPrefix(engineURL.Path, "/"),
			Credentials: config.Credentials{User: engineURL.User.Username()}, MaxRunningQueries: 4},
		{Name: "my", Engine: config.EngineMySQL, Endpoint: my.Addr, Database: myDB, Credentials: config.Credentials{User: my.User}, MaxRunningQueries: 4},
	}
	type fleet struct {
		id   string
		refs map[string]capacity.LeaseRef // by cluster
	}
	var fleets [2]fleet
	for i := range fleets {
		pool, _ := migratedtest.NewPool(t)
		store := pgcapacity.New(pool)
		f := fleet{id: capacity.NewFleet(store, e).ID(ctx), refs: map[string]capacity.LeaseRef{}}
		for _, c := range clusters {
			l, err := store.Acquire(ctx, c.Name, "w1/s1", 4, time.Minute, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			l.Fleet = f.id // as the control plane's API grants it
			f.refs[c.Name] = l.Ref()
		}
		fleets[i] = f
	}
	a, b := fleets[0], fleets[1]
	if a.id == "" || a.id == b.id || a.refs["pg"].ID != b.refs["pg"].ID || a.refs["my"].ID != b.refs["my"].ID {
		t.Fatalf("fleets %q and %q with leases %v and %v: want two fleet ids and the same lease ids", a.id, b.id, a.refs, b.refs)
	}
	fence := enginefence.New(&config.Config{Clusters: clusters})

	t.Run("PostgreSQL", func(t *testing.T) {
		victim, other := pgSleep(t, engineURL.String(), a.refs["pg"], 60), pgSleep(t, engineURL.String(), b.refs["pg"], 3)
		admin, err := pgx.Connect(ctx, engineURL.String())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		for n := 0; n != 2; {
			if err := admin.QueryRow(ctx, "select count(*) from pg_stat_activity where state = 'active' and query like 'select pg_sleep(%' and application_name like 'qf-lease:%'").Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		if done, err := fence.Fence(ctx, "pg", []capacity.LeaseRef{a.refs["pg"]}); err != nil || !done {
			t.Fatalf("fleet A's fence of pg#1: done %v, %v", done, err)
		}
		if err := <-victim; err == nil {
			t.Fatal("fleet A's fenced query finished normally")
		}
		if err := <-other; err != nil {
			t.Fatalf("fleet B's query under its own pg#1 lease: %v; want it to run to its end", err)
		}
	})

	t.Run("MariaDB", func(t *testing.T) {
		eng, err := mysqlengine.OpenSpec(querynode.EngineSpec(clusters[1]))
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		type outcome struct {
			slept string // SLEEP's answer: 0 when it ran to its end, 1 when killed
			err   error
		}
		run := func(ref capacity.LeaseRef, secs int) chan outcome {
			done := make(chan outcome, 1)
			go func() {
				rows, err := eng.Execute(query.WithEngineTag(ctx, ref.Tag()), &query.Request{SQL: fmt.Sprintf("SELECT SLEEP(%d)", secs)})
				if err != nil {
					done <- outcome{err: err}
					return
				}
				defer rows.Close()
				var o outcome
				for {
					rec, err := rows.Next(ctx)
					if err != nil {
						if !errors.Is(err, io.EOF) {
							o.err = err
						}
						break
					}
					if rec.NumRows() > 0 {
						o.slept = rec.Column(0).ValueStr(0)
					}
				}
				done <- o
			}()
			return done
		}
		victim, other := run(a.refs["my"], 60), run(b.refs["my"], 3)
		admin, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var n int
			err := admin.QueryRow("SELECT count(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '/* qf-lease:% */ SELECT SLEEP%'").Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			if n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d tagged SLEEPs in the process list, want 2", n)
			}
		}
		if done, err := fence.Fence(ctx, "my", []capacity.LeaseRef{a.refs["my"]}); err != nil || !done {
			t.Fatalf("fleet A's fence of my#1: done %v, %v", done, err)
		}
		if o := <-victim; o.err == nil && o.slept == "0" {
			t.Fatal("fleet A's fenced statement ran to its end")
		}
		if o := <-other; o.err != nil || o.slept != "0" {
			t.Fatalf("fleet B's statement under its own my#1 lease: SLEEP answered %q, %v; want 0 (ran to its end)", o.slept, o.err)
		}
	})
}
