package flightsql_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	gomysql "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/policy"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestIngestHonoursACatalogRule: under an access rule that lets alice reach one catalog, an
// ingest into a table of another (MariaDB: a database named as the ingest's schema;
// PostgreSQL: the ingest's catalog) is refused, PermissionDenied, and creates nothing; one
// into her catalog goes through.
func TestIngestHonoursACatalogRule(t *testing.T) {
	dsn, db := mytest.NewDatabase(t)
	_, other := mytest.NewDatabase(t)
	my, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pgURL := pgtest.NewDatabase(t)
	pgDB := pgURL[strings.LastIndexByte(pgURL, '/')+1:]
	if i := strings.IndexByte(pgDB, '?'); i >= 0 {
		pgDB = pgDB[:i]
	}
	for _, tc := range []struct {
		spec             engine.Spec
		engine, allowed  string
		catalog, schema  string // the refused ingest's
		ownCatalog, ownS string // the allowed ingest's
	}{
		{engine.Spec{Name: "maria", Kind: "mysql", Endpoint: my.Addr, User: my.User, Password: my.Passwd, Database: db}, config.EngineMySQL, db, "", other, "", db},
		{engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgURL}, config.EnginePostgres, pgDB, "postgres", "public", pgDB, "public"},
	} {
		t.Run(tc.spec.Kind, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.Translation.Mode = config.TranslationOff
			cfg.Clusters = []config.Cluster{{Name: tc.spec.Name, Engine: tc.engine}}
			cfg.ClusterGroups = []config.ClusterGroup{{Name: "main", Members: []string{tc.spec.Name}}}
			cfg.Settings.AccessControl.Rules = []config.AccessRule{{Users: []string{"alice"}, Groups: []string{"main"}, Catalogs: []string{tc.allowed}}}
			pol, err := policy.Compile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := engine.Openers{pgengine.Kind: pgengine.Open, "mysql": mysqlengine.OpenSpec}.Open(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), Check: pol.Check})
			rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
				Clusters: []proxy.ClusterSpec{{Name: tc.spec.Name, Enabled: true, MaxRunningQueries: 4, Engine: eng}},
				Groups:   []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: tc.spec.Name}}, MaxQueuedQueries: 10}},
				Fallback: "main",
			})
			if err != nil {
				t.Fatal(err)
			}
			core.Activate(rt)
			srv, err := flightsql.NewServer(core, flightsql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })
			c, err := fsql.NewClient(l.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-queryflux-user", "alice", "x-queryflux-catalog", tc.allowed)

			ingestInto := func(catalog, schema string) (int64, error) {
				s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
				b := array.NewRecordBuilder(memory.DefaultAllocator, s)
				defer b.Release()
				b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
				rec := b.NewRecordBatch()
				rdr, _ := array.NewRecordReader(s, []arrow.RecordBatch{rec})
				defer rdr.Release()
				opts := &fsql.ExecuteIngestOpts{Table: "ruled", TableDefinitionOptions: &fsql.TableDefinitionOptions{
					IfNotExist: fsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: fsql.TableDefinitionOptionsTableExistsOptionFail}}
				if catalog != "" {
					opts.Catalog = &catalog
				}
				if schema != "" {
					opts.Schema = &schema
				}
				return c.ExecuteIngest(ctx, rdr, opts)
			}
			if _, err := ingestInto(tc.catalog, tc.schema); status.Code(err) != codes.PermissionDenied {
				t.Fatalf("ingest into catalog %q schema %q past the rule: %v", tc.catalog, tc.schema, err)
			}
			if n, err := ingestInto(tc.ownCatalog, tc.ownS); err != nil || n != 2 {
				t.Fatalf("ingest into the allowed catalog: %d, %v", n, err)
			}
		})
	}
}
