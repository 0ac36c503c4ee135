package chaos

import (
	"testing"
)

// revokeLeases is played on real daemons through the admin API: the fleet runs, w-1's leases are
// revoked while it reuses them (the step fails the run when none was revoked), and PostgreSQL,
// sampled from pg_stat_activity, never runs more than the cap while the revoked leases' terms
// last, as the simulator says.
func TestRevokeLiveLeasesRealEngineWithinCap(t *testing.T) {
	t.Parallel()
	rep := runRealFileFor(t, "testdata/revoke-live-smoke.yaml", []string{peakMetric("c1")})
	if m := enginePeak(t, rep); m.Real != 2 || !m.Agree {
		t.Errorf("peak executing on PostgreSQL %v (sim %v), want exactly the cap 2", m.Real, m.Sim)
	}
	for _, v := range rep.Checks {
		if v.Verdict != "PASS" {
			t.Errorf("check %q: %s %s", v.Name, v.Verdict, v.Detail)
		}
	}
}
