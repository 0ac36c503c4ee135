package proxy

import (
	"strconv"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkSharedEngineUserChecks is what every admitted statement pays for the shared engine
// user's checks (killers, run-time SQL, session views, server files), on pgbench -S's statement with a new
// number each time (its simple protocol): kill-prefilter is the kill check's byte prefilter
// alone (what main ran before the view and file checks), three-prefilters the three scans
// without the memo, checks what checkStatements runs.
func BenchmarkSharedEngineUserChecks(b *testing.B) {
	texts := make([]string, 1024)
	for i := range texts {
		texts[i] = "SELECT abalance FROM pgbench_accounts WHERE aid = " + strconv.Itoa(1000000+i*7919%9000000) + ";"
	}
	b.Run("kill-prefilter", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if mayKillSessions(texts[i%len(texts)]) {
				b.Fatal("pgbench's statement may kill")
			}
			i++
		}
	})
	b.Run("three-prefilters", func(b *testing.B) {
		i := 0
		for b.Loop() {
			sql := texts[i%len(texts)]
			if mayKillSessions(sql) || maySeeSessions(sql, "") || mayTouchServerFiles(sql) {
				b.Fatal("pgbench's statement needs a check")
			}
			i++
		}
	})
	b.Run("runtime-prefilter", func(b *testing.B) { // runtimesql.go's scan alone
		i := 0
		for b.Loop() {
			if mayRunTimeSQL(texts[i%len(texts)]) {
				b.Fatal("pgbench's statement may run text")
			}
			i++
		}
	})
	b.Run("checks", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := checkSharedEngineUser(&query.Request{SQL: texts[i%len(texts)], Protocol: query.ProtocolPostgres}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	// trino-go-client sends a statement with arguments as EXECUTE IMMEDIATE '...' USING ...:
	// the run-time SQL check reads it (five readings), every time.
	immediate := make([]string, 1024)
	for i := range immediate {
		immediate[i] = "EXECUTE IMMEDIATE 'SELECT abalance FROM pgbench_accounts WHERE aid = ?' USING " + strconv.Itoa(1000000+i*7919%9000000)
	}
	b.Run("checks-execute-immediate", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := checkSharedEngineUser(&query.Request{SQL: immediate[i%len(immediate)], Protocol: query.ProtocolTrino}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// sharedCheckStatements are BenchmarkSharedChecksPerStatement's statements: pgbench -S's, a
// long ORM statement (Hibernate's shape: aliases, joins, a long IN list), and statements
// holding an x before a quote that is no hex literal ('x', 'tax'), the shape
// TestSQLTokenizedOnceThroughTheCore caught the kill check lexing five times.
var sharedCheckStatements = []struct{ name, sql string }{
	{"pgbench", "SELECT abalance FROM pgbench_accounts WHERE aid = 12345;"},
	{"orm", "select order0_.id as id1_3_0_, customer1_.id as id1_0_1_, order0_.created_at as created_2_3_0_, " +
		"order0_.customer_id as customer5_3_0_, order0_.status as status3_3_0_, order0_.total_amount as total_am4_3_0_, " +
		"customer1_.email as email2_0_1_, customer1_.display_name as display_3_0_1_, customer1_.postal_address as postal_a4_0_1_, " +
		"customer1_.registered_on as register5_0_1_ from public.orders order0_ inner join public.customers customer1_ " +
		"on order0_.customer_id=customer1_.id left outer join public.order_lines lines2_ on order0_.id=lines2_.order_id " +
		"where order0_.status in ($1, $2, $3) and customer1_.region_code=$4 and order0_.created_at between $5 and $6 " +
		"order by order0_.created_at desc, order0_.id asc limit $7 offset $8"},
	{"x-quote", "select g, 'x' || g, 'tax' from generate_series(1, 3) g where note <> 'box'"},
}

// BenchmarkSharedChecksPerStatement is what the shared engine user's three checks (killers,
// session views, server files) cost a statement the memo does not know: the scan that finds
// which checks it needs, and those.
func BenchmarkSharedChecksPerStatement(b *testing.B) {
	for _, st := range sharedCheckStatements {
		b.Run(st.name, func(b *testing.B) {
			b.ReportAllocs()
			req := &query.Request{}
			for b.Loop() {
				*req = query.Request{SQL: st.sql, Protocol: query.ProtocolPostgres}
				if err := runSharedChecks(req, sharedNeedsOf(st.sql), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
