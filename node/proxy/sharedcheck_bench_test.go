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
