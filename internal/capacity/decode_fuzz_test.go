package capacity

import (
	"errors"
	"reflect"
	"testing"

	"github.com/queryflux/queryflux/node/workerapi"
)

// FuzzDecodeWorkerRequests: what a worker posts to the lease endpoints (acquire, release-batch),
// read by their fast canonical readers or strictly, never panics; a refusal is a
// *workerapi.FieldError (a 400 naming the field); and a body the fast reader takes is one the
// strict decoder takes, as the same request (the shortcut never decides). So a hostile worker
// cannot find a body one path reads and the other would refuse or read otherwise: a key twice,
// another case, invalid UTF-8, a number past int64.
func FuzzDecodeWorkerRequests(f *testing.F) {
	for _, seed := range []string{
		`{"cluster":"c","cap":1,"ttlMillis":30000}`,
		`{"cluster":"c","cap":1,"ttlMillis":30000,"holder":"w","waitMillis":5,"release":[{"id":"c#1","generation":2}]}`,
		`{"cluster":"c","cluster":"d","cap":1}`,
		`{"Cluster":"c"}`,
		`{"cluster":"\xff","cap":1,"ttlMillis":1}`,
		`{"cluster":"c","cap":99999999999999999999,"ttlMillis":1}`,
		`{"leases":[{"id":"c#1","generation":1}]}`,
		`{"leases":[{"id":"c#1","generation":1,"generation":2}]}`,
		`{"leases":[{"id":"c#1","generation":1}],"leases":[]}`,
		`{"leases":null}`, `null`, `[]`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fieldErr := func(err error) {
			var fe *workerapi.FieldError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("%q: refused with %T %v, not a FieldError", data, err, err)
			}
		}
		acq, err := DecodeAcquireRequest(data, true)
		fieldErr(err)
		if fast, ok := readAcquireRequest(data); ok {
			var strict AcquireRequest
			if err := workerapi.DecodeStrict(data, &strict); err != nil || !reflect.DeepEqual(fast, strict) || !reflect.DeepEqual(acq, fast) {
				t.Fatalf("%q: the fast reader took %+v, the strict decoder %+v (%v)", data, fast, strict, err)
			}
		}
		rel, err := DecodeReleaseBatchRequest(data)
		fieldErr(err)
		if fast, ok := readReleaseBatchRequest(data); ok {
			var strict ReleaseBatchRequest
			if err := workerapi.DecodeStrict(data, &strict); err != nil || !reflect.DeepEqual(fast, strict) || !reflect.DeepEqual(rel, fast) {
				t.Fatalf("%q: the fast reader took %+v, the strict decoder %+v (%v)", data, fast, strict, err)
			}
		}
	})
}
