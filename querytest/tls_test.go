package querytest

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// curl runs curl with args and returns its output followed by "HTTP <code>".
func curl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "20", "-w", "\nHTTP %{http_code}"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestWorkersOverHTTPS: a control plane serving its admin and worker API over https with
// mutual TLS, and workers that verify it against their CA file and present their own
// certificate. A worker trusting another CA never takes the configuration; a client without
// a certificate is refused at the handshake; the worker's ops listener serves https too.
func TestWorkersOverHTTPS(t *testing.T) {
	ca := frontendtest.NewCA(t)
	cpCert, cpKey := ca.Issue(t, "control-plane")
	wCert, wKey := ca.Issue(t, "worker")
	other := frontendtest.NewCA(t)

	cpAdmin := daemontest.FreeAddr(t)
	cpCfg := daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q}
  tls: {certFile: %q, keyFile: %q, clientCAFile: %q, requireClientCert: true}
clusters:
  - {name: demo, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 4, options: {dataset: demo}}
clusterGroups:
  - {name: demo, members: [demo]}
routingFallback: demo
settings: {security: {trustLoopback: true}}
`, cpAdmin, adminToken, workerSecret, cpCert, cpKey, ca.CertFile))
	startDaemon(t, nil, []string{cpAdmin}, "--config", cpCfg)

	withCert := []string{"--cacert", ca.CertFile, "--cert", wCert, "--key", wKey}
	out, err := curl(t, append(withCert, "-H", "Authorization: Bearer "+adminToken, "https://"+cpAdmin+"/admin/workers")...)
	if err != nil || !strings.HasSuffix(out, "HTTP 200") {
		t.Fatalf("curl --cacert --cert to the admin API: %v %s", err, out)
	}
	if out, err := curl(t, "--cacert", ca.CertFile, "https://"+cpAdmin+"/health"); err == nil {
		t.Fatalf("a client without a certificate was served: %s", out)
	}
	if out, err := curl(t, "http://"+cpAdmin+"/health"); strings.HasSuffix(out, "HTTP 200") {
		t.Fatalf("plain http was served: %v %s", err, out)
	}

	worker := func(name, caFile string) (pg, ops string, p *daemontest.Proc) {
		addrs := daemontest.FreeAddrs(t, 2)
		pg, ops = addrs[0], addrs[1]
		cfg := daemontest.WriteFile(t, name+".yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane:
    url: "https://%s"
    secret: %q
    tls: {caFile: %q, certFile: %q, keyFile: %q}
  tls: {certFile: %q, keyFile: %q}
  frontends:
    postgres: {enabled: true, listen: %q}
`, cpAdmin, workerSecret, caFile, wCert, wKey, wCert, wKey, pg))
		return pg, ops, startDaemon(t, nil, []string{pg, ops}, "--config", cfg, "--name", name, "--ops-listen", ops)
	}
	pg, ops, _ := worker("w-https", ca.CertFile)
	h, p := hostPort(t, pg)
	daemontest.Eventually(t, 30*time.Second, "psql through a worker configured over https", func() bool {
		out, err := exec.Command("psql", "-X", "-w", "-At", "-c", "select count(*) from orders",
			fmt.Sprintf("host=%s port=%s user=queryflux dbname=demo sslmode=verify-full sslrootcert=%s", h, p, ca.CertFile)).CombinedOutput()
		return err == nil && strings.TrimSpace(string(out)) == "500"
	})
	if out, err := curl(t, "--cacert", ca.CertFile, "https://"+ops+"/health"); err != nil || !strings.HasSuffix(out, "HTTP 200") {
		t.Fatalf("curl --cacert to the worker's ops listener: %v %s", err, out)
	}

	_, _, wrong := worker("w-wrong-ca", other.CertFile)
	daemontest.Eventually(t, 30*time.Second, "the worker trusting another CA refusing the control plane", func() bool {
		return strings.Contains(wrong.Output(), "certificate signed by unknown authority")
	})
	if strings.Contains(wrong.Output(), "query configuration active") {
		t.Fatal("a worker that cannot verify the control plane activated a configuration")
	}
}
