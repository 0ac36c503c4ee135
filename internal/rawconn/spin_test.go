package rawconn

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// exchange writes q on a, has b answer it after delay, and reads the answer on a: whether the
// read was answered while spinning.
func exchange(t *testing.T, a *Conn, b net.Conn, delay time.Duration) (spinning bool) {
	t.Helper()
	spinning, err := tryExchange(a, b, after(delay))
	if err != nil {
		t.Fatal(err)
	}
	return spinning
}

// exchangeSpinning is an exchange whose answer is written once a read spins (or after 2 s when
// none does): an answer written before the read began, which a loaded machine's scheduler
// allows however short a delay, would be read at once, spinning or not.
func exchangeSpinning(t *testing.T, a *Conn, b net.Conn) (spinning bool) {
	t.Helper()
	spinning, err := tryExchange(a, b, func() {
		for deadline := time.Now().Add(2 * time.Second); spinWaiters.Load() == 0 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return spinning
}

// after is a peer's wait of d before it answers.
func after(d time.Duration) func() { return func() { time.Sleep(d) } }

// holdIdle keeps machineIdle at idle for the test (the sampler does not change it meanwhile).
func holdIdle(t *testing.T, idle bool) { t.Cleanup(HoldIdle(idle)) }

// tryExchange writes a request on a; b's peer reads it, waits, and answers.
func tryExchange(a *Conn, b net.Conn, wait func()) (spinning bool, _ error) {
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		_, err := io.ReadFull(b, buf)
		if err == nil {
			wait()
			_, err = b.Write([]byte("a"))
		}
		done <- err
	}()
	before := spun.Load()
	if _, err := a.Write([]byte("q")); err != nil {
		return false, err
	}
	buf := make([]byte, 8)
	n, err := a.Read(buf)
	if err != nil || string(buf[:n]) != "a" {
		return false, fmt.Errorf("Read = %q, %v; want \"a\"", buf[:n], err)
	}
	if err := <-done; err != nil {
		return false, err
	}
	return spun.Load() != before, nil
}

// TestAQuickAnswerIsReadWhileSpinning: an answer that comes within the bound is read by the
// spinning read; one that comes later is read after the wait in the poller, and then the
// connection does not spin until an answer comes within the bound again.
func TestAQuickAnswerIsReadWhileSpinning(t *testing.T) {
	holdIdle(t, true)
	a, b := pair(t)
	a.SetSpin(time.Second)
	if !exchangeSpinning(t, a, b) {
		t.Fatal("an answer that came while the read awaited it was not read while spinning (bound 1 s)")
	}
	a.SetSpin(100 * time.Millisecond)
	if exchange(t, a, b, 500*time.Millisecond) {
		t.Fatal("an answer 500 ms after the write was read while spinning (bound 100 ms)")
	}
	if exchange(t, a, b, 2*time.Millisecond) {
		t.Fatal("spun right after an answer that took longer than the bound")
	}
	if !exchangeSpinning(t, a, b) {
		t.Fatal("did not spin again after an answer within the bound")
	}
	if spinWaiters.Load() != 0 {
		t.Fatalf("%d waiters left counted after the reads ended", spinWaiters.Load())
	}
}

// TestNoSpinUnlessSet: a connection made by Listener or Dialer with no bound, or one whose
// read has no write before it (a new connection's first request), waits in the poller at once.
func TestNoSpinUnlessSet(t *testing.T) {
	holdIdle(t, true)
	a, b := pair(t) // Listener(l, 0)
	if exchange(t, a, b, 2*time.Millisecond) {
		t.Fatal("spun with no bound set")
	}
	a.SetSpin(time.Second)
	before := spun.Load()
	go func() {
		time.Sleep(2 * time.Millisecond)
		_, _ = b.Write([]byte("x"))
	}()
	buf := make([]byte, 8)
	if _, err := a.Read(buf); err != nil {
		t.Fatal(err)
	}
	if spun.Load() != before {
		t.Fatal("a read with no write before it spun")
	}
}

// TestASecondWaiterStopsTheSpin: while two reads await answers, neither spins.
func TestASecondWaiterStopsTheSpin(t *testing.T) {
	holdIdle(t, true)
	a1, b1 := pair(t)
	a2, b2 := pair(t)
	a1.SetSpin(10 * time.Second)
	a2.SetSpin(10 * time.Second)
	before := spun.Load()
	first := make(chan bool, 1)
	errs := make(chan error, 1)
	go func() {
		spinning, err := tryExchange(a1, b1, after(300*time.Millisecond))
		first <- spinning
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond) // a1 spins meanwhile
	// a2 still waits when a1's answer comes: a1, however late its thread runs again, sees it.
	second := exchange(t, a2, b2, 600*time.Millisecond)
	firstSpun := <-first
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if firstSpun || second || spun.Load() != before {
		t.Fatal("a read spun while another awaited an answer too")
	}
	if spinWaiters.Load() != 0 {
		t.Fatalf("%d waiters left counted after both reads ended", spinWaiters.Load())
	}
}

// TestASlowPeerDoesNotStopOthersSpinning: a connection whose last answer took longer than the
// bound (a client idle between requests) neither spins nor keeps another read from spinning.
func TestASlowPeerDoesNotStopOthersSpinning(t *testing.T) {
	holdIdle(t, true)
	slow, slowPeer := pair(t)
	a, b := pair(t)
	slow.SetSpin(20 * time.Millisecond)
	a.SetSpin(10 * time.Second)
	if exchange(t, slow, slowPeer, 100*time.Millisecond) {
		t.Fatal("an answer 100 ms after the write was read while spinning (bound 20 ms)")
	}
	errs := make(chan error, 1)
	go func() {
		_, err := tryExchange(slow, slowPeer, after(300*time.Millisecond))
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond) // slow waits meanwhile
	if !exchangeSpinning(t, a, b) {
		t.Fatal("a read did not spin while only a slow connection awaited an answer")
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// TestSpinFromTheEnvironment: QUERYFLUX_SPIN_MICROS in microseconds, bounded; 0 or anything
// else invalid: none; unset: spinDefault.
func TestSpinFromTheEnvironment(t *testing.T) {
	t.Setenv(SpinEnv, "")
	os.Unsetenv(SpinEnv)
	if got := Spin(); got != spinDefault {
		t.Errorf("%s unset: Spin() = %v, want %v", SpinEnv, got, spinDefault)
	}
	for v, want := range map[string]time.Duration{"": 0, "0": 0, "-5": 0, "x": 0, "200": 200 * time.Microsecond, "99999999": spinMax} {
		t.Setenv(SpinEnv, v)
		if got := Spin(); got != want {
			t.Errorf("%s=%q: Spin() = %v, want %v", SpinEnv, v, got, want)
		}
	}
}

// TestNoSpinWithoutIdleCPU: a read that would spin waits in the poller when the machine has no
// idle CPU to spin on.
func TestNoSpinWithoutIdleCPU(t *testing.T) {
	holdIdle(t, false)
	a, b := pair(t)
	a.SetSpin(time.Second)
	if exchange(t, a, b, 0) {
		t.Fatal("a read spun while the machine had no idle CPU")
	}
	machineIdle.Store(true)
	if !exchangeSpinning(t, a, b) {
		t.Fatal("a quick answer was not read while spinning once the machine was idle")
	}
}

// TestIdleEnough: the idle share of /proc/stat's counters between two samples, iowait counted
// idle, guest time not counted twice; unreadable or going backwards: not idle.
func TestIdleEnough(t *testing.T) {
	at := func(line string) cpuTimes {
		c, ok := parseCPULine(line)
		if !ok {
			t.Fatalf("parseCPULine(%q) failed", line)
		}
		return c
	}
	base := at("cpu  100 0 100 800 0 0 0 0 0 0")
	for line, want := range map[string]bool{
		"cpu  150 0 150 900 0 0 0 0 0 0":     true,  // 100 of 300 idle
		"cpu  200 0 200 850 0 0 0 0 0 0":     false, // 50 of 250
		"cpu  200 0 200 820 80 0 0 0 0 0":    true,  // iowait is idle: 100 of 300
		"cpu  300 0 200 850 0 0 0 0 500 500": false, // guest time is in user already: 50 of 350
		"cpu  100 0 100 800 0 0 0 0 0 0":     false, // no time passed
	} {
		if got := idleEnough(base, at(line), 0); got != want {
			t.Errorf("idleEnough from %+v to %q = %v, want %v", base, line, got, want)
		}
	}
	// A spin is idle time: 50 of 250 ticks idle, and 30 of the busy ones spent spinning.
	if busy := at("cpu  200 0 200 850 0 0 0 0 0 0"); idleEnough(base, busy, 0) || !idleEnough(base, busy, 30) {
		t.Error("the ticks spent spinning not counted as idle")
	}
	if idleEnough(base, base, 30) {
		t.Error("idle with no time passed")
	}
	if _, ok := parseCPULine("cpu0 1 2 3 4 5"); ok {
		t.Error("a per-CPU line read as the machine's")
	}
	if _, ok := readCPUTimes("/nonexistent/stat"); ok {
		t.Error("an unreadable file read")
	}
}

// TestTheIdleSamplerSamplesOnlyWhenAsked: /proc/stat is sampled only by reads that ask whether
// the machine is idle, at most once per period, and nothing samples between asks (a daemon at
// rest has no sampler to wake for). Counted, not timed: a slow machine only delays the samples.
func TestTheIdleSamplerSamplesOnlyWhenAsked(t *testing.T) {
	settle := func() uint64 { // the sample under way, if any, ends: its count
		for end := time.Now().Add(5 * time.Second); sampling.Load() && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		if sampling.Load() {
			t.Fatal("a sample did not end within 5 s")
		}
		return samples.Load()
	}
	period, fresh := idleSampleEvery, idleFresh
	t.Cleanup(func() { idleSampleEvery, idleFresh = period, fresh })

	// A hundred asks within one period, each after the sample before it ended: one sample.
	idleSampleEvery, idleFresh = time.Hour, 2*time.Hour
	sampledAt.Store(-int64(2 * time.Hour)) // the last sample is hours old
	before := settle()
	for range 100 {
		askIdle(time.Now())
		settle()
	}
	if n := settle() - before; n != 1 {
		t.Errorf("100 asks within one period took %d samples, want 1", n)
	}

	// Asks a period apart: a sample each.
	idleSampleEvery = time.Millisecond
	before = settle()
	for range 10 {
		time.Sleep(2 * time.Millisecond)
		askIdle(time.Now())
		settle()
	}
	if n := settle() - before; n != 10 {
		t.Errorf("10 asks a period apart took %d samples, want 10", n)
	}

	// No asks: no samples, however many periods pass.
	before = settle()
	time.Sleep(50 * time.Millisecond) // 50 periods
	if n := settle() - before; n != 0 {
		t.Errorf("%d samples were taken while no read asked", n)
	}
}

// TestAStaleSampleIsNotIdle: an answer is used only while its sample is fresh, and a sample
// taken long after the one before it does not answer idle (the share over a quiet while).
func TestAStaleSampleIsNotIdle(t *testing.T) {
	period, fresh := idleSampleEvery, idleFresh
	t.Cleanup(func() { idleSampleEvery, idleFresh = period, fresh })
	idleSampleEvery, idleFresh = time.Hour, time.Millisecond
	for sampling.Load() {
		time.Sleep(time.Millisecond)
	}
	machineIdle.Store(true)
	sampledAt.Store(int64(time.Since(epoch) - time.Minute))
	if askIdle(time.Now()) {
		t.Error("a sample a minute old answered idle")
	}
	// The counters a minute apart say the CPUs were all idle: no answer of idle all the same.
	stat := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(stat, []byte("cpu  100 0 100 900 0 0 0 0 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sampling.Store(true)
	prevTimes, prevOK = cpuTimes{total: 1000, idle: 800}, true
	sampleIdle(stat)
	if machineIdle.Load() {
		t.Error("a sample taken a minute after the last answered idle")
	}
	// The same counters a moment apart: idle.
	idleFresh = time.Hour
	sampling.Store(true)
	prevTimes, prevOK = cpuTimes{total: 1000, idle: 800}, true
	sampleIdle(stat)
	if !machineIdle.Load() || !askIdle(time.Now()) {
		t.Error("a fresh sample of idle CPUs did not answer idle")
	}
}

// TestASpinCountsAsIdle: the time a BeginSpin caller spins is idle in the next sample, so a
// spinner whose peers keep the rest of the machine busier than a quarter still spins.
func TestASpinCountsAsIdle(t *testing.T) {
	period, fresh := idleSampleEvery, idleFresh
	t.Cleanup(func() { idleSampleEvery, idleFresh = period, fresh })
	idleSampleEvery, idleFresh = time.Hour, time.Hour
	for sampling.Load() {
		time.Sleep(time.Millisecond)
	}
	// One spin of 300 ms, reported when it ends.
	release := HoldIdle(true)
	spun0 := spunNanos.Load()
	if !BeginSpin(time.Now().Add(-300 * time.Millisecond)) {
		release()
		t.Fatal("no spin began")
	}
	EndSpin()
	release()
	if d := time.Duration(spunNanos.Load() - spun0); d < 300*time.Millisecond || d > time.Minute {
		t.Fatalf("a 300 ms spin counted %v", d)
	}
	// 250 ticks, 50 of them idle and 30 spun: idle (80 of 250) where without the spin it is not.
	stat := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(stat, []byte("cpu  200 0 200 850 0 0 0 0 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sample := func(spun time.Duration) bool {
		sampledAt.Store(int64(time.Since(epoch)))
		sampling.Store(true)
		prevTimes, prevOK, prevSpun = cpuTimes{total: 1000, idle: 800}, true, spunNanos.Load()-int64(spun)
		sampleIdle(stat)
		return machineIdle.Load()
	}
	if sample(0) {
		t.Error("a sample 50 of 250 ticks idle, nothing spun, answered idle")
	}
	if !sample(300 * time.Millisecond) {
		t.Error("a sample 50 of 250 ticks idle, 30 spun, answered busy")
	}
	// The next sample counts only what was spun since.
	sampling.Store(true)
	prevTimes = cpuTimes{total: 1000, idle: 800}
	sampleIdle(stat)
	if machineIdle.Load() {
		t.Error("a spin counted as idle in two samples")
	}
}

// TestSpinsCountWhatBecameOfEachWait: every read that awaited an answer and found the socket
// empty is counted once, by what became of it: answered while spinning, spun to the bound then
// slept, slept at once after a slow answer, slept at once on a machine not idle.
func TestSpinsCountWhatBecameOfEachWait(t *testing.T) {
	release := HoldIdle(true)
	t.Cleanup(release)
	a, b := pair(t)
	step := func(name string, exchangeOnce func(), want SpinCounts) {
		t.Helper()
		before := Spins()
		exchangeOnce()
		after := Spins()
		got := SpinCounts{after.Answered - before.Answered, after.Waited - before.Waited,
			after.NotIdle - before.NotIdle, after.SlowPeer - before.SlowPeer}
		if got != want {
			t.Errorf("%s: counted %+v, want %+v", name, got, want)
		}
	}
	a.SetSpin(time.Second)
	step("answered while spinning", func() { exchangeSpinning(t, a, b) }, SpinCounts{Answered: 1})
	a.SetSpin(100 * time.Millisecond)
	step("spun to the bound", func() { exchange(t, a, b, 400*time.Millisecond) }, SpinCounts{Waited: 1})
	step("after a slow answer", func() { exchange(t, a, b, 50*time.Millisecond) }, SpinCounts{SlowPeer: 1})
	HoldIdle(false)
	step("on a busy machine", func() { exchange(t, a, b, 50*time.Millisecond) }, SpinCounts{NotIdle: 1})
}

// TestASpinningReadCountsAsIdle: the time a read spins awaiting an answer (at most its bound)
// is idle in the idle sampler's next sample, as an event loop's spin is (TestASpinCountsAsIdle):
// a daemon spinning through every wait of a statement must not find the machine busy from its
// own spin, and stop spinning for it.
func TestASpinningReadCountsAsIdle(t *testing.T) {
	holdIdle(t, true)
	a, b := pair(t)
	a.SetSpin(100 * time.Millisecond)
	spun0 := spunNanos.Load()
	exchange(t, a, b, 400*time.Millisecond) // spins to the bound, then waits
	if d := time.Duration(spunNanos.Load() - spun0); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Fatalf("a read that spun to its bound of 100 ms counted %v as spun", d)
	}
	a.SetSpin(time.Second)
	spun1 := spunNanos.Load()
	if !exchangeSpinning(t, a, b) {
		t.Fatal("no read spun")
	}
	if d := time.Duration(spunNanos.Load() - spun1); d <= 0 || d > time.Second {
		t.Fatalf("a read answered while spinning counted %v as spun", d)
	}
}
