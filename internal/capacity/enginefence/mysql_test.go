package enginefence_test

import (
	"context"
	"database/sql"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/enginefence"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/querynode"
)

// TestFenceKillsTheLeasesMySQLStatements: on MariaDB, a statement the engine ran under lease
// my#7 is killed and the fence confirms; a statement of another lease keeps running.
func TestFenceKillsTheLeasesMySQLStatements(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cluster := config.Cluster{Name: "my", Engine: config.EngineMySQL, Endpoint: my.Addr, Database: name,
		Credentials: config.Credentials{User: my.User}, MaxRunningQueries: 4}
	e, err := mysqlengine.OpenSpec(querynode.EngineSpec(cluster))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fenced, spared := capacity.LeaseRef{ID: "my#7", Generation: 7}, capacity.LeaseRef{ID: "my#8", Generation: 8}
	sleep := func(ref capacity.LeaseRef) chan time.Time {
		done := make(chan time.Time, 1)
		go func() {
			if rows, err := e.Execute(query.WithEngineTag(ctx, ref.Tag()), &query.Request{SQL: "SELECT SLEEP(60)"}); err == nil {
				for _, err := rows.Next(ctx); err == nil; _, err = rows.Next(ctx) {
				}
				rows.Close()
			}
			done <- time.Now()
		}()
		return done
	}
	victim, bystander := sleep(fenced), sleep(spared)
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for n, deadline := 0, time.Now().Add(30*time.Second); n != 2; {
		if err := admin.QueryRow("SELECT count(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '/* qf-lease:my#% */ SELECT SLEEP%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 && time.Now().After(deadline) {
			t.Fatalf("%d statements in the process list start with their lease's comment \"/* qf-lease:my#N */ \", want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f := enginefence.New(&config.Config{Clusters: config.NamedList[config.Cluster]{cluster}})
	done, err := f.Fence(ctx, "my", []capacity.LeaseRef{fenced})
	if err != nil || !done {
		t.Fatalf("fence of my#7: done %v, %v", done, err)
	}
	select {
	case <-victim:
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced lease's statement still runs")
	}
	select {
	case <-bystander:
		t.Fatal("another lease's statement ended")
	default:
	}
}
