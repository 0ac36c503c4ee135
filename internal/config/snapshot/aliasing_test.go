package snapshot

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// TestWorkerConfigSharesNothingWithTheSnapshot: the configuration a worker compiles and applies
// holds no map, slice or pointer of the snapshot it came from. A worker keeps its active
// snapshot (it lends it to peers and diffs the next one against it), and the simulator's fleet
// shares one decoded snapshot per body, so what one worker's activation writes into its config
// must never reach the snapshot another reads.
func TestWorkerConfigSharesNothingWithTheSnapshot(t *testing.T) {
	for _, mode := range []CredentialsMode{Embedded, Stripped} {
		body, err := Encode(build(t, fullConfig(t), mode))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		local := config.QueryFlux{ClusterCredentials: map[string]config.Credentials{
			"trino-1": {User: "u", Password: "p"}, "pg-1": {User: "u", Password: "p"}}}
		cfg, err := s.WorkerConfig(&local)
		if err != nil {
			t.Fatal(err)
		}
		snapMemory := map[uintptr]string{}
		mutableMemory(reflect.ValueOf(s), "snapshot", snapMemory)
		if len(snapMemory) < 10 {
			t.Fatalf("%s: only %d maps and slices found in the snapshot: the walk is broken", mode, len(snapMemory))
		}
		cfgMemory := map[uintptr]string{}
		mutableMemory(reflect.ValueOf(cfg), "config", cfgMemory)
		for addr, where := range cfgMemory {
			if shared, ok := snapMemory[addr]; ok {
				t.Errorf("%s: %s is %s", mode, where, shared)
			}
		}
		if err := config.Compile(cfg); err != nil {
			t.Fatal(err)
		}
		if again, err := Encode(s); err != nil || string(again) != string(body) {
			t.Errorf("%s: compiling the worker's config changed the snapshot (%v)", mode, err)
		}
	}
}

// mutableMemory records, by address, every non-empty map, slice backing array and pointer
// target reachable from v, with the path that reached it.
func mutableMemory(v reflect.Value, path string, into map[uintptr]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		into[v.Pointer()] = path
		mutableMemory(v.Elem(), path, into)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mutableMemory(v.Field(i), path+"."+v.Type().Field(i).Name, into)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		into[v.Pointer()] = path
		for i := range v.Len() {
			mutableMemory(v.Index(i), fmt.Sprintf("%s[%d]", path, i), into)
		}
	case reflect.Map:
		if v.Len() == 0 {
			return
		}
		into[v.Pointer()] = path
		iter := v.MapRange()
		for iter.Next() {
			mutableMemory(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()), into)
		}
	}
}
