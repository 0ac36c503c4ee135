package histfile

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestRoundTrip: whatever is written reads back the same, sorted by arrival.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		users := rapid.Bool().Draw(t, "users")
		name := rapid.StringMatching(`[a-z0-9 ,"\-]{1,8}`)
		f := &File{Origin: time.Date(2026, 12, 1, 18, 0, 0, 123000, time.UTC), Users: users}
		f.Entries = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Entry {
			e := Entry{ArrivalMs: rapid.Int64Range(0, 1e9).Draw(t, "arrival"), Worker: name.Draw(t, "worker"),
				Group: rapid.SampledFrom([]string{"", "bi", "etl,x"}).Draw(t, "group"), Cluster: name.Draw(t, "cluster"),
				Status: rapid.SampledFrom(statuses).Draw(t, "status"), ErrorCode: rapid.SampledFrom([]string{"", "57014"}).Draw(t, "code"),
				QueueMs: rapid.Int64Range(0, 1e6).Draw(t, "queue"), ExecMs: rapid.Int64Range(0, 1e6).Draw(t, "exec")}
			if users {
				e.UserHash = rapid.StringMatching(`[0-9a-f]{16}`).Draw(t, "user")
			}
			return e
		}), 1, 50).Draw(t, "entries")
		var b bytes.Buffer
		if err := Write(&b, f); err != nil {
			t.Fatal(err)
		}
		got, err := Read(&b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if !got.Origin.Equal(f.Origin) || got.Users != users || len(got.Entries) != len(f.Entries) {
			t.Fatalf("read %v users=%v %d entries, wrote %v users=%v %d", got.Origin, got.Users, len(got.Entries), f.Origin, users, len(f.Entries))
		}
		for i := range got.Entries {
			if got.Entries[i] != f.Entries[i] {
				t.Fatalf("entry %d: read %+v, wrote %+v", i, got.Entries[i], f.Entries[i])
			}
			if i > 0 && got.Entries[i].ArrivalMs < got.Entries[i-1].ArrivalMs {
				t.Fatalf("entries out of arrival order at %d", i)
			}
		}
	})
}

// TestBadFilesAreNamed: every kind of broken file is refused with the line and what is wrong.
func TestBadFilesAreNamed(t *testing.T) {
	head := Magic + "\n# origin 2026-12-01T18:00:00Z\n" + strings.Join(Columns, ",") + "\n"
	for _, c := range []struct{ body, want string }{
		{"arrival_ms,worker\n", "line 1: not a queryflux history export"},
		{Magic + "\nnope\n", "line 2: want \"# origin"},
		{Magic + "\n# origin yesterday\n", "origin \"yesterday\" is not an RFC 3339 time"},
		{Magic + "\n# origin 2026-12-01T18:00:00Z\narrival,worker\n", "line 3: header"},
		{head, "no queries in the file"},
		{head + "0,w1,bi,c1,succeeded,,1,2\n5,w1,bi,c1,succeeded,,x,2\n", "line 5: queue_ms \"x\": want an integer >= 0"},
		{head + "-3,w1,bi,c1,succeeded,,1,2\n", "line 4: arrival_ms \"-3\""},
		{head + "0,w1,bi,c1,done,,1,2\n", "line 4: status \"done\""},
		{head + "0,,bi,c1,succeeded,,1,2\n", "line 4: worker: empty"},
		{head + "0,w1,bi,c1,succeeded,,1\n", "line 4: 7 columns, want 8"},
	} {
		_, err := Read(strings.NewReader(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.body, err, c.want)
		}
	}
}
