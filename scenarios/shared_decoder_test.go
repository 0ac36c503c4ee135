package scenarios

import (
	"reflect"
	"testing"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/sim"
)

// The fleet's workers share one decoded snapshot per body, which is what snapshot.Decode makes
// of it, errors included.
func TestSharedDecoderDecodesEachBodyOnce(t *testing.T) {
	snap, err := configSnapshot(2, sim.DefaultStart, false)
	if err != nil {
		t.Fatal(err)
	}
	body, err := snapshot.Encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	d := newSharedDecoder().(*sharedDecoder)
	a, err := d.decode(body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.decode(append([]byte(nil), body...))
	if err != nil || a != b {
		t.Fatalf("second decode of the same bytes: %p, %v; want the first's %p", b, err, a)
	}
	want, _ := snapshot.Decode(body)
	if !reflect.DeepEqual(a, want) {
		t.Errorf("shared %+v, snapshot.Decode %+v", a, want)
	}
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-2] = ' ' // breaks the JSON
	_, wantErr := snapshot.Decode(tampered)
	for range 2 {
		if _, err := d.decode(tampered); err == nil || err.Error() != wantErr.Error() {
			t.Errorf("broken body: %v, want %v", err, wantErr)
		}
	}
}
