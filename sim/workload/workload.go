// Package workload holds small built-in simulated workloads used to test the simulator itself
// and to benchmark it before (and beside) the real roles: ping-pong nodes with random sleeps and
// HTTP calls, and a stand-in heartbeat fleet of workers POSTing JSON to a control plane.
//
// Everything here runs inside the simulator and touches the world only through env.Env and the
// node's simnet client.
package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// PingStats counts what a ping-pong node saw (per incarnation; a crash resets nothing here since
// the stats live outside the node, like a durable store).
type PingStats struct {
	Sent, OK, Failed, Served int
}

type pingMsg struct {
	From string `json:"from"`
	N    int    `json:"n"`
}

// PingPong adds one node per name; each loops forever: sleep a random 0-100ms, POST a JSON ping to
// a random peer under a 200ms deadline. A handler sleeps a random 0-20ms and answers n+1.
func PingPong(s *sim.Sim, names []string) map[string]*PingStats {
	stats := map[string]*PingStats{}
	for _, name := range names {
		st := &PingStats{}
		stats[name] = st
		peers := slices.DeleteFunc(slices.Clone(names), func(p string) bool { return p == name })
		s.AddNode(name, PingNode(peers, st))
	}
	return stats
}

// PingNode is the factory of one ping-pong node that pings peers and counts into st.
func PingNode(peers []string, st *PingStats) sim.Factory {
	return func(n *sim.Node) http.Handler {
		e := n.Env()
		e.Go(n.Ctx(), "pinger", func(ctx context.Context) { pingLoop(ctx, e, n, peers, st) })
		return pongHandler(e, st)
	}
}

func pingLoop(ctx context.Context, e env.Env, n *sim.Node, peers []string, st *PingStats) {
	for i := 0; ; i++ {
		if err := e.Sleep(ctx, time.Duration(e.Rand().Int64N(int64(100*time.Millisecond)))); err != nil {
			return
		}
		peer := peers[e.Rand().Int64N(int64(len(peers)))]
		st.Sent++
		var out pingMsg
		if err := postJSON(ctx, e, n.Client(), "http://"+peer+"/ping", pingMsg{From: n.Name(), N: i}, &out, 200*time.Millisecond); err != nil {
			st.Failed++
			e.Logger().Debug("ping failed", "peer", peer, "err", redact.Error(err))
			continue
		}
		if out.N != i+1 {
			panic(fmt.Sprintf("pong %d for ping %d", out.N, i))
		}
		st.OK++
	}
}

func pongHandler(e env.Env, st *PingStats) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ping", func(w http.ResponseWriter, r *http.Request) {
		var in pingMsg
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := e.Sleep(r.Context(), time.Duration(e.Rand().Int64N(int64(20*time.Millisecond)))); err != nil {
			return
		}
		st.Served++
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(pingMsg{From: "pong", N: in.N + 1})
	})
	return mux
}

// postJSON POSTs in as JSON under a deadline and decodes a 200 answer into out.
func postJSON(ctx context.Context, e env.Env, c *http.Client, url string, in, out any, timeout time.Duration) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := e.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Beat is one stand-in heartbeat.
type Beat struct {
	Worker string            `json:"worker"`
	Seq    int               `json:"seq"`
	Labels map[string]string `json:"labels,omitempty"`
}

// BeatAck is the control plane's answer.
type BeatAck struct {
	OK       bool `json:"ok"`
	Interval int  `json:"intervalMs"`
}

// HeartbeatFleet is a stand-in control plane plus workers that POST JSON heartbeats.
type HeartbeatFleet struct {
	CP       *sim.Node
	Received int            // heartbeats the control plane accepted
	LastSeen map[string]int // worker -> last seq (durable across CP restarts, like a store)
	Failed   int            // heartbeats that got no answer
}

// Heartbeats adds a control plane "cp-1" and workers "w-0".."w-(n-1)"; each worker POSTs a
// heartbeat every interval (with 10% jitter) under a 2s deadline.
func Heartbeats(s *sim.Sim, workers int, interval time.Duration) *HeartbeatFleet {
	f := &HeartbeatFleet{LastSeen: map[string]int{}}
	f.CP = s.AddNode("cp-1", func(n *sim.Node) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /worker/heartbeat", func(w http.ResponseWriter, r *http.Request) {
			var b Beat
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.Received++
			f.LastSeen[b.Worker] = b.Seq
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(BeatAck{OK: true, Interval: int(interval / time.Millisecond)})
		})
		return mux
	})
	for i := range workers {
		name := fmt.Sprintf("w-%d", i)
		s.AddNode(name, func(n *sim.Node) http.Handler {
			e := n.Env()
			e.Go(n.Ctx(), "heartbeat", func(ctx context.Context) {
				for seq := 0; ; seq++ {
					if err := e.Sleep(ctx, env.Jitter(e.Rand(), interval, 0.1)); err != nil {
						return
					}
					var ack BeatAck
					beat := Beat{Worker: name, Seq: seq, Labels: map[string]string{"zone": "a"}}
					if err := postJSON(ctx, e, n.Client(), "http://cp-1/worker/heartbeat", beat, &ack, 2*time.Second); err != nil {
						f.Failed++
					}
				}
			})
			return nil
		})
	}
	return f
}
