package history

import (
	"errors"
	"reflect"
	"testing"

	"github.com/queryflux/queryflux/node/workerapi"
)

// FuzzDecodeBatch: DecodeBatch never panics; what it accepts is valid and survives a round trip;
// what it refuses is a *workerapi.FieldError; its fast path never reads a body otherwise.
func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte(`{"batchId":"b","worker":"w","records":[{"queryId":"q","status":"failed","startedAt":"2026-01-01T00:00:00Z","endedAt":"2026-01-01T00:00:01Z","routingTrace":["x"]}]}`))
	f.Add([]byte(`{"batchId":"b","records":[{"queryId":"q","status":"meh"}]}`))
	f.Add([]byte(`{"batchId":"b","records":[{"queryId":1}]}`))
	f.Add([]byte(`{"batchId":"b","records":[]} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsStrict(t, data) // the fast path reads what it takes as encoding/json does
		b, err := DecodeBatch(data)
		if err != nil {
			var fe *workerapi.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a FieldError", err, err)
			}
			return
		}
		again, err := DecodeBatch(EncodeBatch(b))
		if err != nil {
			t.Fatalf("re-decoding an accepted batch: %v", err)
		}
		for i := range again.Records {
			again.Records[i].StartedAt, again.Records[i].EndedAt = b.Records[i].StartedAt, b.Records[i].EndedAt
		}
		if !reflect.DeepEqual(b, again) {
			t.Fatalf("round trip changed the batch:\n%+v\n%+v", b, again)
		}
	})
}
