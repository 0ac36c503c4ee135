package refusallog

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

type worker struct{ op, name string }

// TestEachKindIsLoggedAtOnceThenOnceAPeriod: a worker refused 30 times in a burst is logged at
// its first refusal only; a second worker refused within the period is logged at once,
// naming it; a period on, a tick logs the first worker's other 29 with their first names and
// the last error, and nothing for the second, which had no refusal since its line.
func TestEachKindIsLoggedAtOnceThenOnceAPeriod(t *testing.T) {
	var l Limiter[worker]
	t0 := time.Unix(1_700_000_000, 0)
	var lines []Line[worker]
	for i := range 30 {
		if line, ok := l.Note(worker{"renew", "w1"}, fmt.Sprintf("lease-%d", i%7), fmt.Errorf("refusal %d", i), t0.Add(time.Duration(i)*time.Second)); ok {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || lines[0].Count != 1 || lines[0].Kind.name != "w1" || !slices.Equal(lines[0].Names, []string{"lease-0"}) {
		t.Fatalf("30 refusals of w1 in 30 s: lines %+v, want the first one's", lines)
	}
	line, ok := l.Note(worker{"renew", "w2"}, "", errors.New("w2's"), t0.Add(40*time.Second))
	if !ok || line.Kind.name != "w2" || line.Count != 1 {
		t.Fatalf("w2's first refusal within w1's minute: %+v %v, want its line at once", line, ok)
	}
	if due := l.Due(t0.Add(59 * time.Second)); len(due) != 0 {
		t.Fatalf("59 s after the first line: due %+v, want none", due)
	}
	due := l.Due(t0.Add(time.Minute))
	if len(due) != 1 || due[0].Kind.name != "w1" || due[0].Count != 29 || !due[0].Since.Equal(t0.Add(time.Second)) ||
		!slices.Equal(due[0].Names, []string{"lease-1", "lease-2", "lease-3", "lease-4", "lease-5"}) || due[0].Err.Error() != "refusal 29" {
		t.Fatalf("a minute on: due %+v, want w1's line counting its 29 others", due)
	}
	if due := l.Due(t0.Add(10 * time.Minute)); len(due) != 0 {
		t.Fatalf("with nothing refused since: due %+v", due)
	}
	if _, ok := l.Note(worker{"renew", "w1"}, "", nil, t0.Add(time.Minute+time.Second)); ok {
		t.Fatal("w1 refused a second after its last line: logged at once, want it held for a minute")
	}
}

// TestKindsAreBounded: past KindsMax kinds, the kinds whose last line is a period old are
// forgotten (logged at once again), and all kinds if none is: a caller that invents kinds
// holds at most KindsMax.
func TestKindsAreBounded(t *testing.T) {
	l := Limiter[int]{KindsMax: 4}
	t0 := time.Unix(0, 0)
	for k := range 3 {
		l.Note(k, "", nil, t0)
	}
	l.Note(3, "", nil, t0.Add(time.Minute))
	l.Note(4, "", nil, t0.Add(time.Minute)) // 0-2 are a minute old: forgotten
	if len(l.kinds) != 2 || len(l.order) != 2 {
		t.Fatalf("kinds %v (order %v), want 3 and 4", l.kinds, l.order)
	}
	if _, ok := l.Note(0, "", nil, t0.Add(time.Minute)); !ok {
		t.Fatal("a forgotten kind's refusal: not logged")
	}
	for k := 10; k < 100; k++ {
		l.Note(k, "", nil, t0.Add(time.Minute))
		if len(l.kinds) > 4 || len(l.order) != len(l.kinds) {
			t.Fatalf("after kind %d: %d kinds, order %v", k, len(l.kinds), l.order)
		}
	}
}

// TestLinesCountEveryRefusalOnce: whatever the refusals, kinds, times and ticks, (a) a kind's
// first refusal is logged at once, (b) two lines of a kind are a period apart or more, (c) the
// lines of a kind count each of its refusals once, the ones still waiting logged by a tick a
// period after the kind's last line, (d) a line's names are distinct, at most NamesMax, each a
// name one of its refusals gave.
func TestLinesCountEveryRefusalOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		every := time.Duration(rapid.IntRange(1, 120).Draw(t, "every")) * time.Second
		l := Limiter[int]{Every: every}
		now := time.Unix(1_000, 0)
		noted := map[int]int{}
		counted := map[int]int{}
		lastLine := map[int]time.Time{}
		namesGiven := map[int][]string{}
		check := func(line Line[int], at time.Time) {
			k := line.Kind
			if last, ok := lastLine[k]; ok && at.Sub(last) < every {
				t.Fatalf("kind %d: lines at %v and %v, less than %v apart", k, last, at, every)
			}
			lastLine[k] = at
			counted[k] += line.Count
			if len(line.Names) > NamesMax || len(line.Names) > line.Count {
				t.Fatalf("kind %d: names %v for %d refusals", k, line.Names, line.Count)
			}
			for i, n := range line.Names {
				if slices.Contains(line.Names[:i], n) || !slices.Contains(namesGiven[k], n) {
					t.Fatalf("kind %d: names %v, given %v", k, line.Names, namesGiven[k])
				}
			}
			namesGiven[k] = nil
		}
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 90_000).Draw(t, "advanceMs")) * time.Millisecond)
			if rapid.IntRange(0, 4).Draw(t, "tick") == 0 {
				for _, line := range l.Due(now) {
					check(line, now)
				}
				continue
			}
			k := rapid.IntRange(0, 5).Draw(t, "kind")
			name := rapid.SampledFrom([]string{"", "a", "b", "c", "d", "e", "f", "g"}).Draw(t, "name")
			first := noted[k] == 0
			noted[k]++
			if name != "" {
				namesGiven[k] = append(namesGiven[k], name)
			}
			line, ok := l.Note(k, name, nil, now)
			if first && !ok {
				t.Fatalf("kind %d's first refusal was not logged", k)
			}
			if ok {
				check(line, now)
			}
		}
		now = now.Add(every)
		for _, line := range l.Due(now) {
			check(line, now)
		}
		for k, n := range noted { //determinism:ok a test's check of every kind
			if counted[k] != n {
				t.Fatalf("kind %d: %d refusals, its lines counted %d", k, n, counted[k])
			}
		}
	})
}
