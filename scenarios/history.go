package scenarios

// History conservation: workers send finished-query records through the real history uplink
// (worker.NewHistoryUplink) to the control plane's ingest (MountHistory). The check
// historyConserved holds the fleet to: every finished query is stored, or counted dropped by
// its worker's uplink, or was still in a crashed incarnation's buffer (lost, counted by the
// simulator from that uplink's pending count); nothing is stored twice or stored without
// having finished.

import (
	"context"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/history"
)

func init() {
	RegisterCheck("historyConserved", parseHistoryConserved)
}

// HistoryTracker is what a worker finished and the uplink of each of its incarnations.
type HistoryTracker struct {
	Finished []string          // query ids in finishing order
	Uplinks  []*history.Uplink // one per incarnation, the last one is the running one
}

// HistoryTrackerOf is worker name's tracker (kept across restarts).
func HistoryTrackerOf(w *World, name string) *HistoryTracker {
	return w.Durable("history/"+name, func() any { return &HistoryTracker{} }).(*HistoryTracker)
}

// countedStore is the control plane's history store (it stands for Postgres: it survives
// restarts) counting how often each id was delivered.
type countedStore struct {
	*history.Memory
	delivered map[string]int
	dupes     int // records the store took although it held them already
}

// HistoryStoreOf is control plane cp's history store.
func HistoryStoreOf(w *World, cp string) *countedStore {
	return w.Durable("historystore/"+cp, func() any {
		return &countedStore{Memory: history.NewMemory(w.Scenario.Workload.History.StoreMax), delivered: map[string]int{}}
	}).(*countedStore)
}

func (s *countedStore) Insert(ctx context.Context, recs []history.Record) (int, error) {
	fresh := 0
	for _, r := range recs {
		s.delivered[r.QueryID]++
		if s.delivered[r.QueryID] == 1 {
			fresh++
		}
	}
	n, err := s.Memory.Insert(ctx, recs)
	if err == nil && n != fresh {
		s.dupes += n - fresh
	}
	return n, err
}

type historyConserved struct {
	maxDropped, minStored int
}

func parseHistoryConserved(sc *Scenario, p Params) (Check, error) {
	var c struct {
		MaxDropped *int `yaml:"maxDropped"`
		MinStored  int  `yaml:"minStored"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if sc.Workload == nil || sc.Workload.History == nil {
		return nil, p.Errorf("historyConserved needs workload.history (the workers' uplink)")
	}
	hc := &historyConserved{maxDropped: -1, minStored: c.MinStored}
	if c.MaxDropped != nil {
		hc.maxDropped = *c.MaxDropped
	}
	return hc, nil
}

func (c *historyConserved) Start(w *World) {}

func (c *historyConserved) Result(w *World) (bool, string) {
	delivered := map[string]int{}
	dupes := 0
	for _, s := range w.Scenario.Nodes() {
		if s.Role == "controlplane" {
			st := HistoryStoreOf(w, s.Name)
			for id, n := range st.delivered {
				delivered[id] += n
			}
			dupes += st.dupes
		}
	}
	var problems []string
	finished := map[string]bool{}
	var nFinished, stored, missing, twice int
	var dropped, lost, pending uint64
	workers, _ := w.Scenario.Resolve("workers")
	for _, name := range workers {
		t := HistoryTrackerOf(w, name)
		for _, id := range t.Finished {
			if finished[id] {
				twice++
			}
			finished[id] = true
			nFinished++
			if delivered[id] > 0 {
				stored++
			} else {
				missing++
			}
		}
		for i, u := range t.Uplinks {
			cs := u.Counters()
			dropped += cs.Dropped
			if i == len(t.Uplinks)-1 && w.Role(name) != nil {
				pending += cs.Pending
			} else {
				lost += cs.Pending // a crashed incarnation's unflushed buffer
			}
		}
	}
	phantom := 0
	for id := range delivered {
		if !finished[id] {
			phantom++
		}
	}
	if dupes > 0 {
		problems = append(problems, fmt.Sprintf("%d records stored twice", dupes))
	}
	if twice > 0 {
		problems = append(problems, fmt.Sprintf("%d queries finished twice", twice))
	}
	if phantom > 0 {
		problems = append(problems, fmt.Sprintf("%d stored records no worker finished", phantom))
	}
	if uint64(missing) > dropped+lost+pending {
		problems = append(problems, fmt.Sprintf("%d finished queries neither stored nor counted (dropped %d + lost %d + pending %d)", missing, dropped, lost, pending))
	}
	if c.maxDropped >= 0 && dropped > uint64(c.maxDropped) {
		problems = append(problems, fmt.Sprintf("dropped %d > maxDropped %d", dropped, c.maxDropped))
	}
	if stored < c.minStored {
		problems = append(problems, fmt.Sprintf("stored %d < minStored %d", stored, c.minStored))
	}
	detail := fmt.Sprintf("finished %d, stored %d, missing %d; uplinks dropped %d, lost in crashes %d, pending %d",
		nFinished, stored, missing, dropped, lost, pending)
	if len(problems) > 0 {
		return false, detail + ": " + strings.Join(problems, "; ")
	}
	return true, detail
}
