package frontendtest

import "testing"

// PythonWith finds a module's interpreter once: asked again, it starts none.
func TestPythonWithFindsEachModuleOnce(t *testing.T) {
	first := PythonWith(t, "json")
	pythons.mu.Lock()
	probes := pythons.probes
	pythons.mu.Unlock()
	if again := PythonWith(t, "json"); again != first {
		t.Fatalf("asked again: %s, first %s", again, first)
	}
	pythons.mu.Lock()
	defer pythons.mu.Unlock()
	if pythons.probes != probes {
		t.Fatalf("asked again, PythonWith started %d interpreters", pythons.probes-probes)
	}
}
