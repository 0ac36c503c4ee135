package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest document and where it came from.
type object struct {
	file string
	kind string
	obj  any
}

func (o object) String() string { return o.file + ": " + o.kind }

// decodeStrict reads one document into the type its kind names; unknown kinds and unknown or
// duplicate fields are errors.
func decodeStrict(doc []byte) (string, any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	default:
		return "", nil, fmt.Errorf("unexpected apiVersion/kind %q %q", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return "", nil, err
	}
	return tm.Kind, obj, nil
}

func loadManifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under kubernetes/: %v", err)
	}
	var out []object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			kind, obj, err := decodeStrict([]byte(doc))
			if err != nil {
				t.Errorf("%s document %d: %v", f, i+1, err)
				continue
			}
			out = append(out, object{file: f, kind: kind, obj: obj})
		}
	}
	return out
}

func stripComments(doc string) string {
	var keep []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := loadManifests(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
	}
	for _, want := range []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget", "Job"} {
		if kinds[want] == 0 {
			t.Errorf("no %s among the manifests (have %v)", want, kinds)
		}
	}
}

// The strict decoder is what catches a misspelt field: prove it does.
func TestStrictDecodingRefusesMisspeltField(t *testing.T) {
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n"
	if _, _, err := decodeStrict([]byte(doc)); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelt field was accepted: %v", err)
	}
}

// queryfluxContainers are the containers that run `queryflux serve`, with their Deployment.
func queryfluxContainers(objs []object) map[*appsv1.Deployment][]corev1.Container {
	out := map[*appsv1.Deployment][]corev1.Container{}
	for _, o := range objs {
		d, ok := o.obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Args) > 0 && c.Args[0] == "serve" {
				out[d] = append(out[d], c)
			}
		}
	}
	return out
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// Probes hit /health and /readyz on the port of the listener that serves them, and the pod's
// grace period covers the daemon's drain.
func TestProbesAndDrainFitTogether(t *testing.T) {
	containers := queryfluxContainers(loadManifests(t))
	if len(containers) < 3 {
		t.Fatalf("want the control plane, the sidecar and the pool: found %d deployments running queryflux", len(containers))
	}
	for d, cs := range containers {
		for _, c := range cs {
			where := d.Name + "/" + c.Name
			checkProbe(t, where, c, c.LivenessProbe, "/health")
			checkProbe(t, where, c, c.ReadinessProbe, "/readyz")
			drain, err := time.ParseDuration(flagValue(c.Args, "--drain-timeout"))
			if err != nil {
				t.Errorf("%s: --drain-timeout: %v", where, err)
				continue
			}
			delay, err := time.ParseDuration(flagValue(c.Args, "--drain-delay"))
			if err != nil || delay <= 0 {
				t.Errorf("%s: --drain-delay must give the Service time to stop sending clients: %q", where, flagValue(c.Args, "--drain-delay"))
				continue
			}
			grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
			if grace == nil || time.Duration(*grace)*time.Second < delay+drain+5*time.Second {
				t.Errorf("%s: terminationGracePeriodSeconds must exceed --drain-delay %v + --drain-timeout %v by at least 5s", where, delay, drain)
			}
		}
	}
}

func checkProbe(t *testing.T, where string, c corev1.Container, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: no HTTP probe for %s", where, path)
		return
	}
	if p.HTTPGet.Path != path {
		t.Errorf("%s: probe path %q, want %q", where, p.HTTPGet.Path, path)
	}
	port := -1
	for _, cp := range c.Ports {
		if cp.Name == p.HTTPGet.Port.String() || fmt.Sprint(cp.ContainerPort) == p.HTTPGet.Port.String() {
			port = int(cp.ContainerPort)
		}
	}
	if port < 0 {
		t.Errorf("%s: probe port %s is not a container port", where, p.HTTPGet.Port.String())
		return
	}
	// Workers serve probes on their ops listener; other roles on the admin API listener.
	if ops := flagValue(c.Args, "--ops-listen"); ops != "" && !strings.HasSuffix(ops, fmt.Sprintf(":%d", port)) {
		t.Errorf("%s: probe port %d but --ops-listen %s", where, port, ops)
	}
	if ops := flagValue(c.Args, "--ops-listen"); ops != "" && strings.HasPrefix(ops, "127.") {
		t.Errorf("%s: --ops-listen %s is loopback: the kubelet cannot reach it", where, ops)
	}
}

// The control plane is replicated and protected by a disruption budget.
func TestControlPlaneIsReplicated(t *testing.T) {
	objs := loadManifests(t)
	var cp *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.obj.(*appsv1.Deployment); ok && d.Name == "queryflux-control-plane" {
			cp = d
		}
	}
	if cp == nil || cp.Spec.Replicas == nil || *cp.Spec.Replicas < 2 {
		t.Fatalf("the control plane Deployment must run at least 2 replicas")
	}
	for _, o := range objs {
		if pdb, ok := o.obj.(*policyv1.PodDisruptionBudget); ok && pdb.Spec.Selector != nil &&
			mapsEqual(pdb.Spec.Selector.MatchLabels, cp.Spec.Selector.MatchLabels) {
			return
		}
	}
	t.Fatal("no PodDisruptionBudget selects the control plane")
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// Every embedded configuration passes `queryflux config check`, and every ${env:NAME} it uses is
// set on the containers that mount it, from a Secret.
func TestEmbeddedConfigsPassConfigCheck(t *testing.T) {
	objs := loadManifests(t)
	bin := buildQueryflux(t)
	mounts := configMapMounts(objs)
	checked := 0
	for _, o := range objs {
		cm, ok := o.obj.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		text, ok := cm.Data["queryflux.yaml"]
		if !ok {
			continue
		}
		checked++
		path := filepath.Join(t.TempDir(), cm.Name+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "config", "check", path)
		cmd.Env = os.Environ()
		for _, m := range envRef.FindAllStringSubmatch(text, -1) {
			cmd.Env = append(cmd.Env, m[1]+"="+placeholder(m[1]))
			for _, c := range mounts[cm.Name] {
				if !containerSetsFromSecret(c, m[1]) {
					t.Errorf("%s: container %s mounts config %s but does not set %s from a Secret", o.file, c.Name, cm.Name, m[1])
				}
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: config check %s: %v\n%s", o.file, cm.Name, err, out)
		}
	}
	if checked < 3 {
		t.Fatalf("checked %d embedded configurations, want the control plane's and both workers'", checked)
	}
}

// placeholder is a value of the right shape for the secret a variable holds.
func placeholder(name string) string {
	if strings.HasSuffix(name, "DATABASE_URL") {
		return "postgres://queryflux:placeholder@postgres:5432/queryflux"
	}
	// One value per secret: config check refuses an admin token equal to the worker secret.
	return "placeholder-secret-for-config-check-" + strings.ToLower(name)
}

// The repository's other example configurations pass `queryflux config check` as well.
func TestExampleConfigsPassConfigCheck(t *testing.T) {
	bin := buildQueryflux(t)
	for _, f := range []string{"../internal/config/testdata/full.yaml", "../internal/defaultconfig/default.yaml"} {
		if out, err := exec.Command(bin, "config", "check", f).CombinedOutput(); err != nil {
			t.Errorf("config check %s: %v\n%s", f, err, out)
		}
	}
}

func configMapMounts(objs []object) map[string][]corev1.Container {
	out := map[string][]corev1.Container{}
	for _, o := range objs {
		d, ok := o.obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		spec := d.Spec.Template.Spec
		for _, v := range spec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			for _, c := range spec.Containers {
				if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name }) {
					out[v.ConfigMap.Name] = append(out[v.ConfigMap.Name], c)
				}
			}
		}
	}
	return out
}

func containerSetsFromSecret(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return true
		}
	}
	return false
}

func buildQueryflux(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "queryflux")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/queryflux")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building queryflux: %v\n%s", err, stderr.String())
	}
	return bin
}

// The systemd units start the daemon with a config file, stop it with SIGTERM and give it longer
// than its drain.
func TestSystemdUnits(t *testing.T) {
	units, _ := filepath.Glob("systemd/*.service")
	if len(units) < 2 {
		t.Fatalf("want a control plane and a worker unit, found %v", units)
	}
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		start := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(text)
		if start == nil || !strings.Contains(start[1], "serve --config") {
			t.Errorf("%s: ExecStart must run `queryflux serve --config`", u)
			continue
		}
		drain, err := time.ParseDuration(flagValue(strings.Fields(start[1]), "--drain-timeout"))
		if err != nil {
			t.Errorf("%s: --drain-timeout: %v", u, err)
			continue
		}
		stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)$`).FindStringSubmatch(text)
		if stop == nil {
			t.Errorf("%s: no TimeoutStopSec", u)
			continue
		}
		var secs int
		fmt.Sscan(stop[1], &secs)
		if time.Duration(secs)*time.Second <= drain {
			t.Errorf("%s: TimeoutStopSec=%d does not cover --drain-timeout %v", u, secs, drain)
		}
		if !strings.Contains(text, "User=") || strings.Contains(text, "User=root") {
			t.Errorf("%s: must run as an unprivileged user", u)
		}
	}
}
