package chaos

import (
	"testing"

	"github.com/queryflux/queryflux/internal/testlong"
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

// registerAs is played on real daemons: a second process registers under w-1's name while w-1
// reuses its leases; the control plane supersedes w-1's session and revokes its leases, w-1
// registers again, and PostgreSQL, sampled from pg_stat_activity, never runs more than the cap
// while the revoked leases' terms last.
func TestRegisterAsLiveWorkerRealEngineWithinCap(t *testing.T) {
	testlong.Skip(t, "TestRevokeLiveLeasesRealEngineWithinCap")
	t.Parallel()
	rep := runRealFileFor(t, "testdata/reregister-live-smoke.yaml", []string{peakMetric("c1")})
	if m := enginePeak(t, rep); m.Real != 2 {
		t.Errorf("peak executing on PostgreSQL %v (sim %v), want exactly the cap 2", m.Real, m.Sim)
	}
	for _, v := range rep.Checks {
		if v.Verdict != "PASS" {
			t.Errorf("check %q: %s %s", v.Name, v.Verdict, v.Detail)
		}
	}
}

// The two ways a live worker loses its leases without dying are played on real daemons, not
// reported unsupported (which would make the whole file UNSUPPORTED).
func TestRevokeLeasesAndRegisterAsArePlanned(t *testing.T) {
	for _, file := range []string{"lease-revoke-live.yaml", "lease-reregister-live.yaml"} {
		sc := load(t, file)
		st, why := planEvent(sc, sc.Timeline[0])
		if why != "" || st.do == nil {
			t.Errorf("%s: %s not planned: %q", file, sc.Timeline[0].Kind, why)
		}
	}
}
