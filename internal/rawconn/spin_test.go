package rawconn

import (
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// exchange writes q on a, has b answer it after delay, and reads the answer on a: whether the
// read was answered while spinning.
func exchange(t *testing.T, a *Conn, b net.Conn, delay time.Duration) (spinning bool) {
	t.Helper()
	spinning, err := tryExchange(a, b, delay)
	if err != nil {
		t.Fatal(err)
	}
	return spinning
}

// holdIdle keeps machineIdle at idle for the test (the sampler does not change it meanwhile).
func holdIdle(t *testing.T, idle bool) {
	idleHeld.Store(true)
	machineIdle.Store(idle)
	t.Cleanup(func() { idleHeld.Store(false) })
}

func tryExchange(a *Conn, b net.Conn, delay time.Duration) (spinning bool, _ error) {
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		_, err := io.ReadFull(b, buf)
		if err == nil {
			time.Sleep(delay)
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
	if !exchange(t, a, b, 2*time.Millisecond) {
		t.Fatal("an answer 2 ms after the write was not read while spinning (bound 1 s)")
	}
	a.SetSpin(100 * time.Millisecond)
	if exchange(t, a, b, 500*time.Millisecond) {
		t.Fatal("an answer 500 ms after the write was read while spinning (bound 100 ms)")
	}
	if exchange(t, a, b, 2*time.Millisecond) {
		t.Fatal("spun right after an answer that took longer than the bound")
	}
	if !exchange(t, a, b, 2*time.Millisecond) {
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
		spinning, err := tryExchange(a1, b1, 300*time.Millisecond)
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
		_, err := tryExchange(slow, slowPeer, 300*time.Millisecond)
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond) // slow waits meanwhile
	if !exchange(t, a, b, 2*time.Millisecond) {
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
	if !exchange(t, a, b, 0) {
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
		if got := idleEnough(base, at(line)); got != want {
			t.Errorf("idleEnough from %+v to %q = %v, want %v", base, line, got, want)
		}
	}
	if _, ok := parseCPULine("cpu0 1 2 3 4 5"); ok {
		t.Error("a per-CPU line read as the machine's")
	}
	if _, ok := readCPUTimes("/nonexistent/stat"); ok {
		t.Error("an unreadable file read")
	}
}

// TestTheIdleSamplerRunsOnlyWhileAsked: /proc/stat is sampled while reads ask whether the
// machine is idle, and the sampler stops once none has asked for its linger, so that a daemon
// at rest does not wake to sample; the next ask starts it again and does not spin meanwhile.
func TestTheIdleSamplerRunsOnlyWhileAsked(t *testing.T) {
	waitSampler := func(running bool, within time.Duration) bool {
		for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if samplerRunning.Load() == running {
				return true
			}
		}
		return false
	}
	if !waitSampler(false, 5*time.Second) { // one an earlier test started
		t.Fatal("the idle sampler kept running 5 s after an earlier test")
	}
	period, linger := idleSampleEvery, idleSamplerLinger
	idleSampleEvery, idleSamplerLinger = 2*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { idleSampleEvery, idleSamplerLinger = period, linger })

	machineIdle.Store(true)
	if askIdle(time.Now()) {
		t.Error("the ask that started the sampler answered idle from before it stopped")
	}
	for range 20 { // asked every 10 ms for 200 ms: it keeps running
		time.Sleep(10 * time.Millisecond)
		askIdle(time.Now())
		if !samplerRunning.Load() {
			t.Fatal("the idle sampler stopped while reads kept asking")
		}
	}
	if !waitSampler(false, 2*time.Second) {
		t.Fatal("the idle sampler still runs 2 s after the last ask (linger 50 ms)")
	}
	if machineIdle.Load() {
		t.Error("a stopped sampler left the machine marked idle")
	}
	askIdle(time.Now())
	if !samplerRunning.Load() {
		t.Error("an ask did not start the stopped sampler")
	}
}
