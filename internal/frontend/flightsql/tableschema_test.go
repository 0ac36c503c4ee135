package flightsql

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestTablesWithSchemaAsQueriesSeeThem: GetTables with include_schema (what JDBC's getColumns
// and ADBC's GetObjects ask) gives each table the schema a client's SELECT * of it gets, on
// engines that describe statements (PostgreSQL, DuckDB) and on one that does not (MariaDB),
// for a name that needs quoting.
func TestTablesWithSchemaAsQueriesSeeThem(t *testing.T) {
	mariadb, _, _ := frontendtest.MariaDB(t)
	for _, c := range []struct {
		name    string
		backend func(t *testing.T) query.Backend
		create  string
		selectT string
	}{
		{"postgres", func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)})
		}, `CREATE TABLE "Odd ""T""" (id INTEGER PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2), at TIMESTAMP)`, `SELECT * FROM "Odd ""T"""`},
		{"duckdb", func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
		}, `CREATE TABLE "Odd ""T""" (id INTEGER PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2), at TIMESTAMP)`, `SELECT * FROM "Odd ""T"""`},
		{"mariadb", func(t *testing.T) query.Backend { return frontendtest.NewBackend(mariadb) },
			"CREATE TABLE `Odd \"T\"` (id INTEGER PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2), at DATETIME)", "SELECT * FROM `Odd \"T\"`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := startServer(t, c.backend(t), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, cl, "alice", "pw")
			mustUpdate(t, ctx, cl, c.create)
			info, err := cl.Execute(ctx, c.selectT)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := fetch(t, ctx, cl, info)

			name := `Odd "T"`
			info, err = cl.GetTables(ctx, &fsql.GetTablesOpts{TableNameFilterPattern: &name, IncludeSchema: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			if !r.Next() || r.RecordBatch().NumRows() != 1 {
				t.Fatalf("GetTables: %v, one table wanted", r.Err())
			}
			got, err := flight.DeserializeSchema(r.RecordBatch().Column(4).(*array.Binary).Value(0), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if got.NumFields() != 4 || !got.Equal(want) {
				t.Fatalf("table_schema\n%v\nwant (SELECT *'s)\n%v", got, want)
			}
		})
	}
}

// TestPrimaryKeysInKeyOrder: GetPrimaryKeys (JDBC's getPrimaryKeys) lists a composite key's
// columns in key order, neither table order nor name order, for the named table only, on every
// engine kind, also when the engine answers information_schema in another order (SQL promises
// none without ORDER BY; the engines here happen to answer in key order).
func TestPrimaryKeysInKeyOrder(t *testing.T) {
	for name, backend := range catalogBackends(t) {
		for i, order := range []string{"as answered", "reversed"} {
			t.Run(name+"/"+order, func(t *testing.T) {
				key, other := fmt.Sprintf("k%d", 2*i+2), fmt.Sprintf("k%d", 2*i+1) // MariaDB's database is one for both
				b := backend(t)
				if order == "reversed" {
					b = reversedRows{b}
				}
				cl := startServer(t, b, Options{Auth: passwords{"alice": "pw"}})
				ctx := login(t, cl, "alice", "pw")
				mustUpdate(t, ctx, cl, "CREATE TABLE "+key+" (a INTEGER, b INTEGER, c INTEGER, d INTEGER, PRIMARY KEY (c, a, d, b))")
				mustUpdate(t, ctx, cl, "CREATE TABLE "+other+" (z INTEGER PRIMARY KEY, a INTEGER)")
				info, err := cl.GetPrimaryKeys(ctx, fsql.TableRef{Table: key})
				if err != nil {
					t.Fatal(err)
				}
				_, rows := fetch(t, ctx, cl, info)
				var got []string
				for _, r := range rows {
					got = append(got, r[3]+"#"+r[4])
				}
				if fmt.Sprint(got) != "[c#1 a#2 d#3 b#4]" || rows[0][2] != key {
					t.Fatalf("primary key of %s: %v (rows %v)", key, got, rows)
				}
			})
		}
	}
}

// reversedRows answers every result's rows last first, one a batch: an engine's order where
// SQL promises none.
type reversedRows struct{ query.Backend }

func (r reversedRows) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	rows, err := r.Backend.Execute(ctx, q)
	if err != nil || rows.Schema() == nil {
		return rows, err
	}
	defer rows.Close()
	var out []arrow.RecordBatch
	for {
		b, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for i := range b.NumRows() {
			out = append(out, b.NewSlice(i, i+1))
		}
	}
	slices.Reverse(out)
	res := frontendtest.NewRecordRows(rows.Schema(), rows.Tag(), out...)
	for _, b := range out {
		b.Release() // NewRecordRows retained its own
	}
	return res, nil
}

// TestForeignKeysBothWays: GetImportedKeys, GetExportedKeys and GetCrossReference (JDBC's
// getImportedKeys and kin) pair each referencing column with the column it references, in key
// order, with the delete rule, on every engine kind; on MySQL every primary key is named
// PRIMARY, so a key must not be paired with other tables' keys.
func TestForeignKeysBothWays(t *testing.T) {
	for name, backend := range catalogBackends(t) {
		t.Run(name, func(t *testing.T) {
			cl := startServer(t, backend(t), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, cl, "alice", "pw")
			mustUpdate(t, ctx, cl, "CREATE TABLE fk_parent (a INTEGER, b INTEGER, PRIMARY KEY (a, b))")
			mustUpdate(t, ctx, cl, "CREATE TABLE fk_unrelated (a INTEGER, b INTEGER, PRIMARY KEY (a, b))")
			cascade, childDel := " ON DELETE CASCADE", "0"
			if name == "duckdb" { // DuckDB's own SQL (a Flight SQL client's) has no referential actions
				cascade, childDel = "", "3"
			}
			mustUpdate(t, ctx, cl, "CREATE TABLE fk_child (id INTEGER PRIMARY KEY, pb INTEGER, pa INTEGER, "+
				"FOREIGN KEY (pa, pb) REFERENCES fk_parent (a, b)"+cascade+")")
			mustUpdate(t, ctx, cl, "CREATE TABLE fk_other (id INTEGER PRIMARY KEY, x INTEGER, y INTEGER, "+
				"FOREIGN KEY (x, y) REFERENCES fk_parent (a, b))")
			pairs := func(info *flight.FlightInfo, err error) string {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				_, rows := fetch(t, ctx, cl, info)
				var got []string
				for _, r := range rows {
					got = append(got, r[2]+"."+r[3]+"<-"+r[6]+"."+r[7]+"#"+r[8]+" del="+r[12])
				}
				return fmt.Sprint(got)
			}
			if got := pairs(cl.GetImportedKeys(ctx, fsql.TableRef{Table: "fk_child"})); got != "[fk_parent.a<-fk_child.pa#1 del="+childDel+" fk_parent.b<-fk_child.pb#2 del="+childDel+"]" {
				t.Errorf("imported keys of fk_child: %s", got)
			}
			if got := pairs(cl.GetExportedKeys(ctx, fsql.TableRef{Table: "fk_parent"})); !strings.Contains(got, "fk_parent.a<-fk_child.pa#1") ||
				!strings.Contains(got, "fk_parent.b<-fk_other.y#2") || strings.Count(got, "<-") != 4 {
				t.Errorf("exported keys of fk_parent: %s", got)
			}
			if got := pairs(cl.GetCrossReference(ctx, fsql.TableRef{Table: "fk_parent"}, fsql.TableRef{Table: "fk_other"})); got != "[fk_parent.a<-fk_other.x#1 del=3 fk_parent.b<-fk_other.y#2 del=3]" &&
				got != "[fk_parent.a<-fk_other.x#1 del=1 fk_parent.b<-fk_other.y#2 del=1]" { // MariaDB's default is RESTRICT
				t.Errorf("cross reference fk_parent <- fk_other: %s", got)
			}
		})
	}
}

// TestForeignKeysInFlightSQLsOrder: the foreign key listings come in the order Flight SQL
// gives each (imported keys and a cross reference by the referenced table and key, exported
// keys by the referencing table and key; then key sequence), whatever order the engine
// answers information_schema in: keys whose column order is neither name nor declaration
// order, a table with keys to two tables declared in the other order, two tables referencing
// one; also through a backend answering every row reversed.
func TestForeignKeysInFlightSQLsOrder(t *testing.T) {
	for name, backend := range catalogBackends(t) {
		for i, order := range []string{"as answered", "reversed"} {
			t.Run(name+"/"+order, func(t *testing.T) {
				p := fmt.Sprintf("o%d_", i) // MariaDB's database is one for both
				b := backend(t)
				if order == "reversed" {
					b = reversedRows{b}
				}
				cl := startServer(t, b, Options{Auth: passwords{"alice": "pw"}})
				ctx := login(t, cl, "alice", "pw")
				mustUpdate(t, ctx, cl, "CREATE TABLE "+p+"zeta (a INTEGER, b INTEGER, c INTEGER, d INTEGER, PRIMARY KEY (c, a, d, b))")
				mustUpdate(t, ctx, cl, "CREATE TABLE "+p+"alpha (id INTEGER PRIMARY KEY)")
				mustUpdate(t, ctx, cl, "CREATE TABLE "+p+"kc (w INTEGER, x INTEGER, y INTEGER, z INTEGER, zr INTEGER, "+
					"FOREIGN KEY (z, x, w, y) REFERENCES "+p+"zeta (c, a, d, b), FOREIGN KEY (zr) REFERENCES "+p+"alpha (id))")
				mustUpdate(t, ctx, cl, "CREATE TABLE "+p+"kb (n INTEGER, o INTEGER, q INTEGER, r INTEGER, "+
					"FOREIGN KEY (r, q, o, n) REFERENCES "+p+"zeta (c, a, d, b))")
				pairs := func(info *flight.FlightInfo, err error) string {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
					_, rows := fetch(t, ctx, cl, info)
					var got []string
					for _, r := range rows {
						got = append(got, strings.TrimPrefix(r[2], p)+"."+r[3]+"<-"+strings.TrimPrefix(r[6], p)+"."+r[7]+"#"+r[8])
					}
					return fmt.Sprint(got)
				}
				if got, want := pairs(cl.GetImportedKeys(ctx, fsql.TableRef{Table: p + "kc"})),
					"[alpha.id<-kc.zr#1 zeta.c<-kc.z#1 zeta.a<-kc.x#2 zeta.d<-kc.w#3 zeta.b<-kc.y#4]"; got != want {
					t.Errorf("imported keys of kc:\n got %s\nwant %s", got, want)
				}
				if got, want := pairs(cl.GetExportedKeys(ctx, fsql.TableRef{Table: p + "zeta"})),
					"[zeta.c<-kb.r#1 zeta.a<-kb.q#2 zeta.d<-kb.o#3 zeta.b<-kb.n#4 zeta.c<-kc.z#1 zeta.a<-kc.x#2 zeta.d<-kc.w#3 zeta.b<-kc.y#4]"; got != want {
					t.Errorf("exported keys of zeta:\n got %s\nwant %s", got, want)
				}
				if got, want := pairs(cl.GetCrossReference(ctx, fsql.TableRef{Table: p + "zeta"}, fsql.TableRef{Table: p + "kc"})),
					"[zeta.c<-kc.z#1 zeta.a<-kc.x#2 zeta.d<-kc.w#3 zeta.b<-kc.y#4]"; got != want {
					t.Errorf("cross reference zeta <- kc:\n got %s\nwant %s", got, want)
				}
			})
		}
	}
}

// catalogBackends open a backend on each engine kind whose catalog the metadata calls read:
// PostgreSQL and DuckDB behind a proxy core, MariaDB (which describes nothing) behind the
// test backend.
func catalogBackends(t *testing.T) map[string]func(t *testing.T) query.Backend {
	mariadb, _, _ := frontendtest.MariaDB(t)
	return map[string]func(t *testing.T) query.Backend{
		"postgres": func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)})
		},
		"duckdb": func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
		},
		"mariadb": func(t *testing.T) query.Backend { return frontendtest.NewBackend(mariadb) },
	}
}

// TestExecuteSchemaWithoutRunning: GetExecuteSchema (ADBC's execute_schema) and a prepared
// statement's schema give the columns the statement's result has, without running it (a
// described INSERT inserts nothing); MariaDB, which describes nothing, is told so.
func TestExecuteSchemaWithoutRunning(t *testing.T) {
	for name, backend := range catalogBackends(t) {
		t.Run(name, func(t *testing.T) {
			cl := startServer(t, backend(t), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, cl, "alice", "pw")
			mustUpdate(t, ctx, cl, "CREATE TABLE s (id INTEGER, name VARCHAR(10))")
			res, err := cl.GetExecuteSchema(ctx, "SELECT id, name FROM s")
			if name == "mariadb" {
				wantCode(t, "a schema MariaDB cannot describe", err, codes.Unimplemented)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := flight.DeserializeSchema(res.GetSchema(), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			info, err := cl.Execute(ctx, "SELECT id, name FROM s")
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := fetch(t, ctx, cl, info); !got.Equal(want) {
				t.Fatalf("GetExecuteSchema\n%v\nwant (the result's)\n%v", got, want)
			}
			prep, err := cl.Prepare(ctx, "SELECT id, name FROM s")
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close(ctx)
			if res, err := prep.GetSchema(ctx); err != nil {
				t.Fatal(err)
			} else if ps, err := flight.DeserializeSchema(res.GetSchema(), memory.DefaultAllocator); err != nil || !ps.Equal(got) {
				t.Fatalf("the prepared statement's schema %v (%v), want %v", ps, err, got)
			}
			_, err = cl.GetExecuteSchema(ctx, "INSERT INTO s VALUES (1, 'x')")
			wantCode(t, "the schema of an INSERT", err, codes.Unimplemented)
			if got := count(t, ctx, cl, "s"); got != "0" {
				t.Fatalf("a described INSERT inserted: %s rows", got)
			}
		})
	}
}
