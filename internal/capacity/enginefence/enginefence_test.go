package enginefence_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/enginefence"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestFenceTerminatesTheLeasesBackends: a backend running under lease pg#7's tag is
// terminated and the fence confirms; a backend of another lease keeps running, and so does one
// under the same tag in another database (another fleet's cluster "pg" on the same server,
// whose lease ids are made the same way); clusters the fence cannot ask are not confirmed.
func TestFenceTerminatesTheLeasesBackends(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Clusters: config.NamedList[config.Cluster]{
		{Name: "pg", Engine: config.EnginePostgres, Endpoint: u.Host, Database: strings.TrimPrefix(u.Path, "/"),
			Credentials: config.Credentials{User: u.User.Username()}, MaxRunningQueries: 4},
		{Name: "my", Engine: config.EngineMySQL, Endpoint: "127.0.0.1:3306", MaxRunningQueries: 4},
	}}
	f := enginefence.New(cfg)
	ctx := context.Background()
	fenced, spared := capacity.LeaseRef{ID: "pg#7", Generation: 7}, capacity.LeaseRef{ID: "pg#8", Generation: 8}
	sleep := func(ref capacity.LeaseRef, url string) chan error { return pgSleep(t, url, ref, 60) }
	victim, bystander, otherFleet := sleep(fenced, dbURL), sleep(spared, dbURL), sleep(fenced, pgtest.NewDatabase(t))
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for n := 0; n != 3; {
		if err := admin.QueryRow(ctx, "select count(*) from pg_stat_activity where state = 'active' and query = 'select pg_sleep(60)' and application_name like '%pg#%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	done, err := f.Fence(ctx, "pg", []capacity.LeaseRef{fenced})
	if err != nil || !done {
		t.Fatalf("fence of pg#7: done %v, %v", done, err)
	}
	if err := <-victim; err == nil {
		t.Fatal("the fenced lease's query finished normally")
	}
	select {
	case err := <-bystander:
		t.Fatalf("another lease's query ended: %v", err)
	case err := <-otherFleet:
		t.Fatalf("the same tag's query in another database ended: %v", err)
	default:
	}
	if done, err := f.Fence(ctx, "my", []capacity.LeaseRef{fenced}); done || err == nil {
		t.Fatalf("fence on a MySQL cluster: done %v, %v; want not confirmed, with the reason", done, err)
	}
	if done, err := f.Fence(ctx, "nowhere", []capacity.LeaseRef{fenced}); done || err == nil {
		t.Fatalf("fence on an unknown cluster: done %v, %v", done, err)
	}
}

// pgSleep runs pg_sleep(secs) on the database at url in a session of its own tagged with ref's
// lease tag, as a worker's engine connection is, and sends its error when it ends.
func pgSleep(t *testing.T, url string, ref capacity.LeaseRef, secs int) chan error {
	ctx := context.Background()
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["application_name"] = ref.Tag()
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	done := make(chan error, 1)
	go func() { _, err := conn.Exec(ctx, fmt.Sprintf("select pg_sleep(%d)", secs)); done <- err }()
	return done
}
