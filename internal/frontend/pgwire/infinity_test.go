package pgwire_test

import (
	"fmt"
	"testing"
)

// TestInfinityOnArrowPath: PostgreSQL's infinite dates and timestamps survive the Arrow path
// (carried as the Arrow type's extreme values) and reach the client as infinity again, in text
// and binary formats, as on a direct connection.
func TestInfinityOnArrowPath(t *testing.T) {
	addr, url, core, _ := coreServer(t, coreSetup{noPassthrough: true})
	direct := connect(t, url)
	proxied := connect(t, proxyURL(addr, "alice"))
	sql := `select 'infinity'::timestamptz, '-infinity'::timestamptz, 'infinity'::timestamp,
		'-infinity'::timestamp, 'infinity'::date, '-infinity'::date, '2024-02-29 12:00'::timestamp, '2024-02-29'::date`
	for name, mode := range pgxModes {
		t.Run(name, func(t *testing.T) {
			wantCols, want := collect(t, direct, mode, sql, nil)
			gotCols, got := collect(t, proxied, mode, sql, nil)
			if fmt.Sprint(gotCols, got) != fmt.Sprint(wantCols, want) {
				t.Fatalf("through the Arrow path:\n%v %v\ndirect:\n%v %v", gotCols, got, wantCols, want)
			}
		})
	}
	if p := core.Paths(); p.Arrow == 0 || p.Passthrough != 0 {
		t.Fatalf("paths %+v: want the Arrow path only", p)
	}
}
