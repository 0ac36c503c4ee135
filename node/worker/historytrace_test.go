package worker

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/node/proxy"
)

// TestHistoryTraceIsTheRecordsSteps: a record's routing trace in the history is its own steps'
// lines whatever the records before it carried: the very slice of the record before (a
// runtime's decision for a protocol), an equal copy, other steps of the same length, a shorter
// or longer slice of the same array, the same slice with a step written over in place, or none.
func TestHistoryTraceIsTheRecordsSteps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		step := rapid.Custom(func(t *rapid.T) proxy.TraceStep {
			return proxy.TraceStep{
				Router:  rapid.SampledFrom([]string{"protocolBased", "header", "fallback"}).Draw(t, "router"),
				Matched: rapid.Bool().Draw(t, "matched"),
				Group:   rapid.SampledFrom([]string{"", "maria", "pg"}).Draw(t, "group"),
				Reason:  rapid.SampledFrom([]string{"", "no router matched", "mysql"}).Draw(t, "reason"),
			}
		})
		steps := rapid.SliceOfN(step, 0, 3).Draw(t, "first")
		for i := range rapid.IntRange(1, 12).Draw(t, "records") {
			switch rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("next %d", i)) {
			case 0: // the very slice again
			case 1:
				steps = slices.Clone(steps)
			case 2: // other steps of the same length, in a new array
				steps = rapid.SliceOfN(step, len(steps), len(steps)).Draw(t, fmt.Sprintf("same length %d", i))
			case 3: // the same array, another length
				if cap(steps) > 0 {
					steps = steps[:rapid.IntRange(0, cap(steps)).Draw(t, fmt.Sprintf("resliced %d", i))]
				}
			case 4:
				steps = rapid.SliceOfN(step, 0, 3).Draw(t, fmt.Sprintf("new %d", i))
			case 5:
				if len(steps) > 0 {
					steps[rapid.IntRange(0, len(steps)-1).Draw(t, fmt.Sprintf("written %d", i))] = step.Draw(t, fmt.Sprintf("over %d", i))
				}
			}
			var want []string
			for _, s := range steps {
				want = append(want, traceLine(s))
			}
			got := HistoryRecordOf(&proxy.Record{QueryID: "q", Trace: steps}).RoutingTrace
			if !slices.Equal(got, want) {
				t.Fatalf("record %d: trace %q, its steps say %q", i, got, want)
			}
		}
	})
}
