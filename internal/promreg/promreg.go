// Package promreg registers Prometheus collectors so that registering the same series twice
// (several nodes, servers or config syncs built on one registry, as tests and the simulator
// do) reuses the first collector instead of panicking or counting apart; and, on a registry
// declared shared (Share), builds each metric set once however many nodes are built on it.
//
// It touches only the registry it is given, and its own table of shared registries.
package promreg

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it. When reg already holds an equal collector (same
// name, labels and help) of c's type, it returns that one, and the caller counts on it. A nil
// reg leaves c unregistered. Any other error is a programming error and panics, as
// prometheus.MustRegister does.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("registering metrics: " + err.Error())
}

// shared holds, for each registry declared shared, the metric sets built on it by key. Building
// a set (descriptors, label checks) and registering it (the registry describes every collector
// on a goroutine of its own) cost a simulated worker about 8 % of its CPU when a fleet of
// thousands shares one registry. Entries live until Forget: nothing here waits for the garbage
// collector, whose timing the simulator must not depend on.
var shared = struct {
	mu   sync.Mutex
	sets map[*prometheus.Registry]map[any]any
}{sets: map[*prometheus.Registry]map[any]any{}}

// Share declares reg shared by many nodes: from now on Once builds each metric set on it once.
// Call Forget(reg) when the nodes built on it are gone.
func Share(reg *prometheus.Registry) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.sets[reg] == nil {
		shared.sets[reg] = map[any]any{}
	}
}

// Forget ends Share(reg): the sets built on reg are no longer kept here.
func Forget(reg *prometheus.Registry) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	delete(shared.sets, reg)
}

// Shared reports whether reg is shared (Share) and not forgotten since (Forget).
func Shared(reg *prometheus.Registry) bool {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	return shared.sets[reg] != nil
}

// Once returns the metric set build registers on reg. On a shared registry (Share) it builds
// the set for key once and returns that one to every later caller, which must then only count
// on it (a set holding one node's state must not be built through Once). On any other
// registry, nil included, it calls build each time. key must be comparable; an unexported
// type of the caller's package (type metricsKey struct{}) keeps keys of different packages apart.
func Once[T any](reg prometheus.Registerer, key any, build func() T) T {
	r, _ := reg.(*prometheus.Registry) // only a *Registry can be shared
	if r == nil {
		return build()
	}
	shared.mu.Lock()
	sets := shared.sets[r]
	if sets == nil {
		shared.mu.Unlock()
		return build()
	}
	if v, ok := sets[key]; ok {
		shared.mu.Unlock()
		return must[T](v, key)
	}
	shared.mu.Unlock()
	// Built outside the lock: build registers on reg, which may call back into collectors.
	v := build()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if sets := shared.sets[r]; sets != nil {
		if first, ok := sets[key]; ok { // built meanwhile by another caller: theirs counts
			return must[T](first, key)
		}
		sets[key] = v
	}
	return v
}

func must[T any](v, key any) T {
	t, ok := v.(T)
	if !ok {
		panic(fmt.Sprintf("promreg: the metric set of key %T is a %T, not what this caller builds", key, v))
	}
	return t
}
