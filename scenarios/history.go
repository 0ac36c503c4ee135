package scenarios

// History conservation: workers send finished-query records through the real history uplink
// (worker.NewHistoryUplink) to the control plane's ingest (MountHistory). The check
// historyConserved holds the fleet to, record by record: every finished query id is stored
// once, or was dropped by its worker's uplink under that id (the uplink names every record it
// drops), or was still in a crashed incarnation's buffer (lost: that uplink's pending ids), or
// is still pending in the running one; nothing is stored twice or stored without having
// finished. Counts alone would let counted drops cover records lost without a word.

import (
	"context"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/assembly"
)

// HistoryTracker is what a worker finished and the uplink of each of its incarnations.
type HistoryTracker struct {
	Finished []string          // query ids in finishing order
	Uplinks  []*history.Uplink // one per incarnation, the last one is the running one
	Dropped  map[string]int    // query ids the uplinks dropped (UplinkConfig.OnDrop)
}

// HistoryTrackerOf is worker name's tracker (kept across restarts).
func HistoryTrackerOf(w *World, name string) *HistoryTracker {
	return w.Durable("history/"+name, func() any { return &HistoryTracker{Dropped: map[string]int{}} }).(*HistoryTracker)
}

// countedStore is the control plane's history store (it stands for Postgres: it survives
// restarts) counting how often each id was delivered.
type countedStore struct {
	*history.Memory
	delivered map[string]int
	dupes     int // records the store took although it held them already
	// lossEvery, for tests only: every Nth fresh record is acknowledged but never stored nor
	// counted (a planted bug historyConserved must catch).
	lossEvery, fresh int
}

// HistoryStoreOf is control plane cp's history store.
func HistoryStoreOf(w *World, cp string) *countedStore {
	return w.Durable("historystore/"+cp, func() any {
		size := assembly.HistoryMemoryRecordsMax
		if wl := w.Scenario.Workload; wl != nil && wl.History != nil {
			size = wl.History.StoreMax
		}
		return &countedStore{Memory: history.NewMemory(size), delivered: map[string]int{}, lossEvery: w.opts.PlantHistoryLoss}
	}).(*countedStore)
}

func (s *countedStore) Insert(ctx context.Context, recs []history.Record) (int, error) {
	recs, lost := s.plantLoss(recs)
	n, err := s.insert(ctx, recs)
	return n + lost, err
}

// plantLoss takes every lossEvery-th fresh record out of recs, unseen.
func (s *countedStore) plantLoss(recs []history.Record) ([]history.Record, int) {
	if s.lossEvery == 0 {
		return recs, 0
	}
	kept := recs[:0:0]
	for _, r := range recs {
		if s.delivered[r.QueryID] == 0 {
			s.fresh++
			if s.fresh%s.lossEvery == 0 {
				continue
			}
		}
		kept = append(kept, r)
	}
	return kept, len(recs) - len(kept)
}

func (s *countedStore) insert(ctx context.Context, recs []history.Record) (int, error) {
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
	detail, problems := c.evaluate(w)
	if len(problems) > 0 {
		return false, detail + ": " + strings.Join(problems, "; ")
	}
	return true, detail
}

// evaluate accounts for every finished query and lists what does not hold.
func (c *historyConserved) evaluate(w *World) (detail string, problems []string) {
	delivered := map[string]int{}
	dupes := 0
	for _, s := range w.Scenario.Nodes() {
		if s.Role == "controlplane" {
			st := HistoryStoreOf(w, s.Name)
			for id, n := range st.delivered { //determinism:ok sums
				delivered[id] += n
			}
			dupes += st.dupes
		}
	}
	var a historyAccount
	finished := map[string]bool{}
	workers, _ := w.Scenario.Resolve("workers")
	for _, name := range workers {
		a.worker(HistoryTrackerOf(w, name), w.Role(name) != nil, delivered, finished)
	}
	phantom := 0
	for id := range delivered { //determinism:ok a count
		if !finished[id] {
			phantom++
		}
	}
	problems = a.problems
	if dupes > 0 {
		problems = append(problems, fmt.Sprintf("%d records stored twice", dupes))
	}
	if phantom > 0 {
		problems = append(problems, fmt.Sprintf("%d stored records no worker finished", phantom))
	}
	if n := len(a.storedDropped); n > 0 {
		problems = append(problems, fmt.Sprintf("%d stored records also counted dropped by their uplink; first %s", n, a.storedDropped[0]))
	}
	if a.missing > 0 {
		problems = append(problems, fmt.Sprintf("%d finished queries neither stored nor dropped, lost or pending by id; first %s",
			a.missing, strings.Join(a.missingIDs, " ")))
	}
	if c.maxDropped >= 0 && a.dropped > c.maxDropped {
		problems = append(problems, fmt.Sprintf("dropped %d > maxDropped %d", a.dropped, c.maxDropped))
	}
	if a.stored < c.minStored {
		problems = append(problems, fmt.Sprintf("stored %d < minStored %d", a.stored, c.minStored))
	}
	detail = fmt.Sprintf("finished %d: stored %d, dropped %d, lost in crashes %d, pending %d, missing %d",
		a.finished, a.stored, a.dropped, a.lost, a.pending, a.missing)
	return detail, problems
}

// historyAccount places every finished query id: stored, dropped (named by its uplink), lost
// (pending in a crashed incarnation), pending (in the running one), or missing.
type historyAccount struct {
	finished, stored, dropped, lost, pending, missing int
	missingIDs                                        []string
	// storedDropped are stored records their uplink also counted dropped: the counts
	// (stored + dropped = finished, what an operator and the real-daemon oracle see) then
	// say one record more than there was.
	storedDropped []string
	problems      []string
}

func (a *historyAccount) worker(t *HistoryTracker, running bool, delivered map[string]int, finished map[string]bool) {
	lost, pending := map[string]bool{}, map[string]bool{}
	var counted uint64
	for i, u := range t.Uplinks {
		counted += u.Counters().Dropped
		into := lost // a crashed incarnation's unsent buffer
		if i == len(t.Uplinks)-1 && running {
			into = pending
		}
		for _, id := range u.PendingIDs() {
			into[id] = true
		}
	}
	named := 0
	for _, n := range t.Dropped { //determinism:ok a sum
		named += n
	}
	if uint64(named) != counted {
		a.problems = append(a.problems, fmt.Sprintf("uplinks counted %d drops but named %d", counted, named))
	}
	for _, id := range t.Finished {
		if finished[id] {
			a.problems = append(a.problems, fmt.Sprintf("query %s finished twice", id))
		}
		finished[id] = true
		a.finished++
		switch {
		case delivered[id] > 0:
			a.stored++
			if t.Dropped[id] > 0 {
				a.storedDropped = append(a.storedDropped, id)
			}
		case t.Dropped[id] > 0:
			a.dropped++
		case lost[id]:
			a.lost++
		case pending[id]:
			a.pending++
		default:
			a.missing++
			if len(a.missingIDs) < 5 {
				a.missingIDs = append(a.missingIDs, id)
			}
		}
	}
}
