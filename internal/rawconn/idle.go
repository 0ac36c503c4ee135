package rawconn

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A spinning read uses a CPU while it polls. Under load that CPU is taken from the peers it
// waits for (measured: RESULTS.md, session 27, trino), at rest it is one that would have
// halted. machineIdle tells the two apart: whether the machine's CPUs spent at least
// idleShareMin of their time idle over the last sample of /proc/stat (a spinner keeps one CPU
// busy itself, so on two CPUs it still sees half idle). Where /proc/stat cannot be read it
// stays false, and nothing spins.
//
// The sampler runs only while reads ask (askIdle): it stops when none has asked for
// idleSamplerLinger, so that a daemon at rest does not wake ten times a second to read
// /proc/stat, and starts again at the next ask, which does not spin (its answer would be stale).
var machineIdle atomic.Bool

const (
	idleShareMin = 0.25
	statPath     = "/proc/stat"
)

// The sampler's period and how long it outlives the last ask (variables for tests).
var (
	idleSampleEvery   = 100 * time.Millisecond
	idleSamplerLinger = 2 * time.Second
)

var (
	samplerRunning atomic.Bool
	lastAsked      atomic.Int64 // the last askIdle's time since epoch, in nanoseconds
	epoch          = time.Now() // a monotonic origin: a stepped wall clock does not move it
)

// idleHeld, set by tests, keeps machineIdle as they set it.
var idleHeld atomic.Bool

// askIdle reports whether the machine had idle CPU at the last sample, and keeps the sampler
// running (starting it when stopped: then false, as nothing was sampled while it was stopped).
func askIdle(now time.Time) bool {
	lastAsked.Store(int64(now.Sub(epoch)))
	if samplerRunning.Load() {
		return machineIdle.Load()
	}
	if samplerRunning.CompareAndSwap(false, true) {
		if !idleHeld.Load() {
			machineIdle.Store(false)
		}
		go sampleIdle(statPath, idleSampleEvery, idleSamplerLinger)
	}
	return machineIdle.Load()
}

// sampleIdle sets machineIdle from path every period until no read has asked for linger.
func sampleIdle(path string, period, linger time.Duration) {
	prev, ok := readCPUTimes(path)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for now := range tick.C {
		if now.Sub(epoch)-time.Duration(lastAsked.Load()) > linger {
			// A read that asks between the check and the store below finds the sampler
			// still running and reads a stale value once; the next ask starts it again.
			if !idleHeld.Load() {
				machineIdle.Store(false)
			}
			samplerRunning.Store(false)
			return
		}
		cur, okCur := readCPUTimes(path)
		if !idleHeld.Load() {
			machineIdle.Store(ok && okCur && idleEnough(prev, cur))
		}
		prev, ok = cur, okCur
	}
}

// cpuTimes are the machine's CPU time counters: all of them, and the idle ones (idle, iowait).
type cpuTimes struct{ total, idle uint64 }

// idleEnough reports whether the CPUs were idle at least idleShareMin of the time from prev to cur.
func idleEnough(prev, cur cpuTimes) bool {
	total, idle := cur.total-prev.total, cur.idle-prev.idle
	return cur.total > prev.total && cur.idle >= prev.idle && float64(idle) >= idleShareMin*float64(total)
}

// readCPUTimes reads the first ("cpu ") line of /proc/stat at path.
func readCPUTimes(path string) (cpuTimes, bool) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, false
	}
	return parseCPULine(line)
}

// parseCPULine reads "cpu  user nice system idle iowait irq softirq steal ...".
func parseCPULine(line string) (cpuTimes, bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		if i >= 8 {
			break // guest and guest_nice are counted in user and nice already
		}
		t.total += v
		if i == 3 || i == 4 {
			t.idle += v
		}
	}
	return t, true
}
