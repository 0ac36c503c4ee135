package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/queryflux/queryflux/node/workerapi"
)

// Wire format of POST /worker/history and GET /admin/queries.
const (
	MediaQueryRecords = "application/vnd.queryflux.query-records.v1+json"
	MediaQueryPage    = "application/vnd.queryflux.query-page.v1+json"
	MediaIngestAck    = "application/vnd.queryflux.query-records-ack.v1+json"

	PathWorkerHistory = "/worker/history"
	PathAdminQueries  = "/admin/queries"

	BatchRecordsMax = 5000     // records in one batch
	BatchBytesMax   = 32 << 20 // bytes of one batch body
	BatchIDLenMax   = 64
)

// QueryRecordBatchV1 is what a worker's uplink sends: a batch of finished queries. BatchID is
// fresh per attempt and only for logs; idempotency is by each record's QueryID.
type QueryRecordBatchV1 struct {
	BatchID string   `json:"batchId"`
	Worker  string   `json:"worker"` // what the worker calls itself; the control plane stamps its own view
	Records []Record `json:"records"`
}

// IngestAck is the control plane's answer to a batch.
type IngestAck struct {
	BatchID    string `json:"batchId"`
	Accepted   int    `json:"accepted"`   // records in the batch
	Inserted   int    `json:"inserted"`   // records new to the store
	Duplicates int    `json:"duplicates"` // records it already had from this worker (a retried batch)
	// Refused counts the records not stored: their query id another worker recorded first, or
	// they name a cluster, group or user the control plane never gave this worker, or their id or
	// a name holds a NUL byte (KeyNUL). Sending them again changes nothing. RefusedRecords names
	// the first RefusedListedMax of them, in batch order.
	Refused        int             `json:"refused,omitempty"`
	RefusedRecords []RefusedRecord `json:"refusedRecords,omitempty"`
}

// RefusedRecord is one record of a batch the control plane did not store, and why.
type RefusedRecord struct {
	Index   int    `json:"index"` // in the batch's records
	QueryID string `json:"queryId"`
	Error   string `json:"error"`
}

// RefusedListedMax bounds IngestAck.RefusedRecords, so an ack stays small whatever the batch.
const RefusedListedMax = 100

func fieldError(field, format string, args ...any) *workerapi.FieldError {
	return &workerapi.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// rawBatch decodes the envelope first, so each record's errors can carry its index.
type rawBatch struct {
	BatchID string            `json:"batchId"`
	Worker  string            `json:"worker"`
	Records []json.RawMessage `json:"records"`
}

// DecodeBatch strictly decodes and validates a batch: unknown fields, wrong types, trailing
// data and invalid records are a *workerapi.FieldError naming the field ("records[3].status").
func DecodeBatch(data []byte) (*QueryRecordBatchV1, error) {
	if len(data) > BatchBytesMax {
		return nil, fieldError("", "body larger than %d bytes", BatchBytesMax)
	}
	b, ok := decodeBatchFast(data)
	if !ok {
		b = &QueryRecordBatchV1{}
	}
	if !ok && decodeStrict(data, b, "") != nil {
		// Slow path, only for bad bodies: decode record by record to name the field.
		var err error
		if b, err = decodeBatchLocating(data); err != nil {
			return nil, err
		}
	}
	if err := b.validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// decodeBatchLocating decodes the envelope first, so each record's errors carry its index.
func decodeBatchLocating(data []byte) (*QueryRecordBatchV1, error) {
	var raw rawBatch
	if err := decodeStrict(data, &raw, ""); err != nil {
		return nil, err
	}
	b := &QueryRecordBatchV1{BatchID: raw.BatchID, Worker: raw.Worker}
	if raw.Records != nil {
		b.Records = make([]Record, len(raw.Records))
	}
	for i, rr := range raw.Records {
		if err := decodeStrict(rr, &b.Records[i], fmt.Sprintf("records[%d]", i)); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// validate checks the envelope and every record; errors name the field ("records[3].status").
func (b *QueryRecordBatchV1) validate() error {
	switch {
	case b.BatchID == "":
		return fieldError("batchId", "required")
	case len(b.BatchID) > BatchIDLenMax:
		return fieldError("batchId", "longer than %d bytes", BatchIDLenMax)
	case b.Records == nil:
		return fieldError("records", "required")
	case len(b.Records) > BatchRecordsMax:
		return fieldError("records", "more than %d records", BatchRecordsMax)
	}
	for i := range b.Records {
		if err := b.Records[i].Validate(); err != nil {
			var fe *workerapi.FieldError
			if errors.As(err, &fe) {
				fe.Field = fmt.Sprintf("records[%d].%s", i, fe.Field)
			}
			return err
		}
	}
	return nil
}

// decodeStrict decodes one JSON object into v; errors name the field under prefix.
func decodeStrict(data []byte, v any, prefix string) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fieldError(prefix, "must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, data, prefix)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fieldError(prefix, "trailing data after the JSON object")
	}
	// A key in another case (encoding/json takes it), or given twice (it keeps the last).
	fe := workerapi.ExactKeys(data, v)
	if fe == nil {
		fe = workerapi.CheckBody(data)
	}
	if fe != nil {
		fe.Field = joinField(prefix, fe.Field)
		return fe
	}
	return nil
}

// joinField is field under prefix.
func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

func jsonError(err error, data []byte, prefix string) error {
	join := func(f string) string { return joinField(prefix, f) }
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fieldError(join(typeErr.Field), "must be a JSON %s, not %s", typeErr.Type.Kind(), typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fieldError(prefix, "malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	}
	if name, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		return fieldError(join(strings.TrimSuffix(name, `"`)), "unknown field")
	}
	if f := badTimeField(data); f != "" {
		return fieldError(join(f), "must be an RFC 3339 time")
	}
	return fieldError(prefix, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// badTimeField finds which time field of a record does not parse (time.Time's own errors carry
// no field name).
func badTimeField(data []byte) string {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return ""
	}
	for _, f := range []string{"startedAt", "endedAt"} {
		if raw, ok := probe[f]; ok {
			var r Record
			if json.Unmarshal([]byte(`{"`+f+`":`+string(raw)+`}`), &r) != nil {
				return f
			}
		}
	}
	return ""
}

// EncodeBatch is the body the uplink sends: what json.Marshal writes for b (appendBatch).
func EncodeBatch(b *QueryRecordBatchV1) []byte {
	return appendBatch(make([]byte, 0, 64+len(b.Records)*400), b)
}
