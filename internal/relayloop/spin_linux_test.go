package relayloop

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/rawconn"
)

// TestALoopSpinsOnlyForQuickAnswersOnAnIdleMachine: a loop whose waits may spin takes a quick
// message while spinning when the machine has idle CPU; it never spins on a busy machine or
// without a bound; and when its peers are slower than the bound, a wait that came after a long
// one does not spin (at most every other wait spins there: one after a quick message).
func TestALoopSpinsOnlyForQuickAnswersOnAnIdleMachine(t *testing.T) {
	const rounds = 40
	for _, c := range []struct {
		name         string
		idle         bool
		bound, delay time.Duration
		spun, spins  [2]float64 // the shares of the loop's waits that a spin ended, that spun
	}{
		{"idle machine, quick peers", true, 50 * time.Millisecond, 0, [2]float64{0.5, 1}, [2]float64{0.5, 1}},
		{"busy machine", false, 50 * time.Millisecond, 0, [2]float64{0, 0}, [2]float64{0, 0}},
		{"no bound", true, 0, 0, [2]float64{0, 0}, [2]float64{0, 0}},
		{"peers slower than the bound", true, time.Millisecond, 3 * time.Millisecond, [2]float64{0, 0.1}, [2]float64{0, 0.2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(rawconn.HoldIdle(c.idle))
			l, err := NewWith(0, chosenBackend(BackendAuto), c.bound)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Close)
			r := startPair(t, l, [2]Framer{nil, nil}, nil)
			for range rounds {
				time.Sleep(c.delay)
				if _, err := r.client.Write([]byte("q")); err != nil {
					t.Fatal(err)
				}
				readN(t, r.server, 1)
				time.Sleep(c.delay)
				if _, err := r.server.Write([]byte("a")); err != nil {
					t.Fatal(err)
				}
				readN(t, r.client, 1)
			}
			// (how many times the loop waited depends on how the threads ran: a loop may find
			// a message and the next answer at once, on a loaded machine every time: no wait
			// then, and so no spin, which is all a case that wants none asks)
			waits := float64(l.spin.waits.Load())
			spun, spins := float64(l.spin.spun.Load())/max(waits, 1), float64(l.spin.spins.Load())/max(waits, 1)
			if waits == 0 && c.spun[1] > 0 || spun < c.spun[0] || spun > c.spun[1] || spins < c.spins[0] || spins > c.spins[1] {
				t.Errorf("of %.0f waits %.2f ended spinning (want %.2f to %.2f), %.2f spun (want %.2f to %.2f)",
					waits, spun, c.spun[0], c.spun[1], spins, c.spins[0], c.spins[1])
			}
		})
	}
}
