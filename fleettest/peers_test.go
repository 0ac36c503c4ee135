package fleettest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// peerFleet is a control plane and workers in front of one PostgreSQL cluster named pg, each
// worker with its own frontends: the set-up of the tests whose requests cross workers
// (forwarding of follow-ups, preferred workers).
type peerFleet struct {
	*fleet
	names []string
	addr  map[string]map[string]string // worker -> "trino", "postgres", "flightsql" or "ops" -> address
	procs map[string]*daemontest.Proc  // nil once a test killed the worker
	ca    *frontendtest.CA             // the fleet's CA when it speaks TLS (peerFleetOptions.tls)

	scheme string       // of the control plane's and the workers' ops listeners
	client *http.Client // trusts ca
}

// peerWorker is one worker of a peerFleet: its name and the frontends it listens on.
type peerWorker struct {
	name      string
	frontends []string
}

// peerFleetOptions shape a peerFleet.
type peerFleetOptions struct {
	cap    int    // pg's maxRunningQueries
	groups string // the configuration's clusterGroups, routers and routingFallback (YAML)
	// tls: the control plane serves https and every worker has its own certificate
	// (queryflux.tls), so its ops listener and the endpoints it registers are https.
	tls     bool
	workers []peerWorker
}

// withFrontends is n workers w1..wn, each listening on frontends.
func withFrontends(n int, frontends ...string) []peerWorker {
	out := make([]peerWorker, n)
	for i := range out {
		out[i] = peerWorker{name: fmt.Sprintf("w%d", i+1), frontends: frontends}
	}
	return out
}

func newPeerFleet(t *testing.T, o peerFleetOptions) *peerFleet {
	engineURL, db := engineDatabases(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	pf := &peerFleet{fleet: f, addr: map[string]map[string]string{}, procs: map[string]*daemontest.Proc{}}
	scheme, cpTLS, wTLS := "http", "", ""
	if o.tls {
		pf.ca = frontendtest.NewCA(t)
		cert, key := pf.ca.Issue(t, "fleet")
		scheme = "https"
		cpTLS = fmt.Sprintf("  tls: {certFile: %q, keyFile: %q}\n", cert, key)
		wTLS = fmt.Sprintf("  tls: {certFile: %q, keyFile: %q}\n", cert, key)
		wTLS += fmt.Sprintf("  controlPlane: {url: %q, secret: %q, tls: {caFile: %q}}\n", "https://"+f.apiAddr, workerSecret, pf.ca.CertFile)
	} else {
		wTLS = fmt.Sprintf("  controlPlane: {url: %q, secret: %q}\n", "http://"+f.apiAddr, workerSecret)
	}
	cp := f.controlPlaneYAML(db, "")
	cp = strings.Replace(cp, "queryflux:\n", "queryflux:\n"+cpTLS, 1)
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", cp+fmt.Sprintf(`clusters:
  - {name: pg, engine: postgres, endpoint: %q, database: %q, credentials: {user: %q}, maxRunningQueries: %d}
%s
settings: {security: {trustLoopback: true}}
`, engineURL.Host, strings.TrimPrefix(engineURL.Path, "/"), engineURL.User.Username(), o.cap, o.groups))
	f.cp = daemontest.Start(t, "controlplane", "serve", "--config", f.cpConfig, "--allow-short-timeouts",
		"--heartbeat-interval", heartbeat.String(), "--stale-after", staleAfter.String(), "--evict-grace", evictGrace.String())
	pf.scheme, pf.client = scheme, &http.Client{Timeout: daemontest.CallTimeout}
	if pf.ca != nil {
		pf.client.Transport = &http.Transport{TLSClientConfig: pf.ca.ClientTLS()}
	}
	daemontest.Eventually(t, 15*time.Second, "control plane /health", func() bool {
		code, _ := pf.get(scheme + "://" + f.apiAddr + "/health")
		return code == 200
	})
	for _, w := range o.workers {
		pf.names = append(pf.names, w.name)
		addrs := daemontest.FreeAddrs(t, len(w.frontends)+1)
		pf.addr[w.name] = map[string]string{"ops": addrs[len(w.frontends)]}
		var fe strings.Builder
		for i, name := range w.frontends {
			pf.addr[w.name][name] = addrs[i]
			fmt.Fprintf(&fe, "    %s: {enabled: true, listen: %q}\n", name, addrs[i])
		}
		cfg := daemontest.WriteFile(t, w.name+".yaml", "queryflux:\n  role: worker\n"+wTLS+"  frontends:\n"+fe.String())
		pf.procs[w.name] = daemontest.Start(t, w.name, "serve", "--config", cfg, "--name", w.name, "--ops-listen", pf.addr[w.name]["ops"],
			"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	}
	// Every worker must know every peer before the owners they compute agree.
	daemontest.Eventually(t, 60*time.Second, "every worker registered and healthy", func() bool {
		var list []workerapi.WorkerInfo
		code, body := pf.get(scheme + "://" + f.apiAddr + workerapi.PathAdminWorkers)
		if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
			return false
		}
		registered := 0
		for _, w := range list {
			if slices.Contains(pf.names, w.Name) && w.Online && w.State == workerapi.StateHealthy {
				registered++
			}
		}
		return registered == len(pf.names)
	})
	for _, name := range pf.names {
		daemontest.Eventually(t, 60*time.Second, name+" ready", func() bool {
			code, _ := pf.get(pf.opsURL(name) + "/readyz")
			return code == 200
		})
	}
	// Peer lists refresh with heartbeats: the owners workers compute agree once each knows all.
	for _, name := range pf.names {
		daemontest.Eventually(t, 60*time.Second, name+" knows every peer, healthy", func() bool {
			var st struct{ Peers []workerapi.Peer }
			code, body := pf.get(pf.opsURL(name) + "/worker/status")
			if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
				return false
			}
			healthy := 0
			for _, p := range st.Peers {
				if slices.Contains(pf.names, p.Name) && p.Healthy {
					healthy++
				}
			}
			return healthy == len(pf.names)
		})
	}
	return pf
}

// get fetches url (with the admin token, which only the admin API reads) trusting the fleet's
// CA; status 0 means no answer, with the error as body.
func (pf *peerFleet) get(url string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := pf.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// opsURL is worker's ops listener as a URL.
func (pf *peerFleet) opsURL(worker string) string { return pf.scheme + "://" + pf.addr[worker]["ops"] }

// metric sums a worker's series of name whose labels contain every one of labels.
func (pf *peerFleet) metric(worker, name string, labels ...string) float64 {
	pf.t.Helper()
	code, body := pf.get(pf.opsURL(worker) + "/metrics")
	if code != 200 {
		pf.t.Fatalf("%s /metrics: %d %s", worker, code, body)
	}
	return metricSum(body, name, labels...)
}

// metricSum sums the series of name in a /metrics body whose labels contain every one of labels.
func metricSum(body, name string, labels ...string) float64 {
	re := regexp.MustCompile(`(?m)^` + name + `(\{[^}]*\})? (\S+)$`)
	sum := 0.0
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(m[1], l)
		}
		if v, err := strconv.ParseFloat(m[2], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// fleetMetric is metric summed over the workers still running.
func (pf *peerFleet) fleetMetric(name string, labels ...string) float64 {
	sum := 0.0
	for _, w := range pf.names {
		if pf.procs[w] != nil {
			sum += pf.metric(w, name, labels...)
		}
	}
	return sum
}

// forwards is a worker's queryflux_forwards_total for protocol and outcome.
func (pf *peerFleet) forwards(worker, protocol, outcome string) int {
	return int(pf.metric(worker, "queryflux_forwards_total", `protocol="`+protocol+`"`, `outcome="`+outcome+`"`))
}

// kill SIGKILLs worker.
func (pf *peerFleet) kill(worker string) {
	pf.procs[worker].Kill(pf.t)
	pf.procs[worker] = nil
}
