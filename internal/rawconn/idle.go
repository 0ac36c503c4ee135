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
// The sampling rides on the asks themselves (askIdle): an ask that finds the last sample
// idleSampleEvery old takes the next one, in a goroutine of its own so that the read does not
// wait for /proc/stat. Nothing runs between asks: a daemon at rest has no timer of the
// sampler's to wake for (a ticker that ran 2 s after each ask woke an idle daemon about ten
// times a second after every health check: RESULTS.md, session 29, perf). An answer is used
// only while its sample is at most idleFresh old, and a sample taken more than idleFresh after
// the one before it answers "not idle": the share over a long quiet while says nothing of now.
var machineIdle atomic.Bool

const (
	idleShareMin = 0.25
	statPath     = "/proc/stat"
)

// The sampling period and how long a sample stays good (variables for tests).
var (
	idleSampleEvery = 100 * time.Millisecond
	idleFresh       = 2 * time.Second
)

// spunNanos is the time spent spinning by BeginSpin's callers (an event loop's thread) and by
// spinning reads (spinEnded), which the sampler counts as idle: the spinner's CPU would be idle
// without the spin. Counted busy,
// a spinner on two CPUs finds the machine under a quarter idle as soon as the peers it waits
// for use a fifth of the other CPU (a MySQL client and MariaDB behind one client's statements
// use more: RESULTS.md, session 30, mypass), and so spins only every other sample period.
var (
	spunNanos atomic.Int64
	prevSpun  int64 // spunNanos at the last sample (the sampler's)
)

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux.
const userHZ = 100

var (
	sampling  atomic.Bool   // a sample is being taken; its holder owns prevTimes
	sampledAt atomic.Int64  // the last sample's time since epoch, in nanoseconds (0: none)
	samples   atomic.Uint64 // samples taken, counted by tests
	prevTimes cpuTimes      // the last sample's counters
	prevOK    bool          // whether the last sample read them
	epoch     = time.Now()  // a monotonic origin: a stepped wall clock does not move it
)

// idleHeld, set by tests, keeps machineIdle as they set it.
var idleHeld atomic.Bool

// askIdle reports whether the machine had idle CPU at the last sample, if that sample is
// fresh, and starts the next sample when the last is idleSampleEvery old.
func askIdle(now time.Time) bool {
	if idleHeld.Load() {
		return machineIdle.Load()
	}
	since := now.Sub(epoch) - time.Duration(sampledAt.Load())
	if since >= idleSampleEvery && sampling.CompareAndSwap(false, true) {
		go sampleIdle(statPath)
	}
	return since <= idleFresh && machineIdle.Load()
}

// sampleIdle reads path and sets machineIdle from the share of idle time since the last
// sample. The caller holds sampling; sampleIdle releases it.
func sampleIdle(path string) {
	defer sampling.Store(false)
	cur, ok := readCPUTimes(path)
	spun := spunNanos.Load()
	spin := uint64(max(time.Duration(spun-prevSpun), 0) * userHZ / time.Second) // in /proc/stat's ticks
	at := time.Since(epoch)
	fresh := sampledAt.Load() != 0 && at-time.Duration(sampledAt.Load()) <= idleFresh
	if !idleHeld.Load() {
		machineIdle.Store(ok && prevOK && fresh && idleEnough(prevTimes, cur, spin))
	}
	prevTimes, prevOK, prevSpun = cur, ok, spun
	sampledAt.Store(int64(at))
	samples.Add(1)
}

// cpuTimes are the machine's CPU time counters: all of them, and the idle ones (idle, iowait).
type cpuTimes struct{ total, idle uint64 }

// idleEnough reports whether the CPUs were idle at least idleShareMin of the time from prev to
// cur, counting spin ticks spent spinning (spunNanos) as idle.
func idleEnough(prev, cur cpuTimes, spin uint64) bool {
	if cur.total <= prev.total || cur.idle < prev.idle {
		return false
	}
	total, idle := cur.total-prev.total, cur.idle-prev.idle
	return float64(min(idle+spin, total)) >= idleShareMin*float64(total)
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
