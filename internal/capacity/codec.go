package capacity

import (
	"encoding/json"
	"strconv"

	"github.com/queryflux/queryflux/node/workerapi"
)

// An acquire is a worker's most frequent call after its heartbeat, and its request and answer
// were each encoded and decoded by reflection, some twice (the control plane's statistics read
// both again): a twentieth of a simulated fleet's CPU (RESULTS.md, "## Simulator at 1,000
// workers"). So they have a codec of their own for the common case, as heartbeats do
// (workerapi/codec.go): the encoders write exactly json.Marshal's bytes, and the decoders read
// exactly those bytes without reflection. Anything else (text that needs escaping, another
// encoder's body) goes through encoding/json itself. TestAcquireCodecIsEncodingJSON holds
// them to encoding/json both ways.

// AppendJSON appends json.Marshal(req) to dst, without reflection.
func (req *AcquireRequest) AppendJSON(dst []byte) []byte {
	w := workerapi.NewCanonWriter(dst)
	w.Raw(`{"cluster":`)
	w.Str(req.Cluster)
	w.Raw(`,"cap":`)
	w.Int(int64(req.Cap))
	w.Raw(`,"ttlMillis":`)
	w.Int(req.TTLMillis)
	if req.Holder != "" {
		w.Raw(`,"holder":`)
		w.Str(req.Holder)
	}
	if req.WaitMillis != 0 {
		w.Raw(`,"waitMillis":`)
		w.Int(req.WaitMillis)
	}
	for i, ref := range req.Release {
		if i == 0 {
			w.Raw(`,"release":[`)
		} else {
			w.Raw(`,`)
		}
		w.Raw(`{"id":`)
		w.Str(ref.ID)
		w.Raw(`,"generation":`)
		w.Int(ref.Generation)
		w.Raw(`}`)
	}
	if len(req.Release) > 0 {
		w.Raw(`]`)
	}
	if req.RequestID != "" {
		w.Raw(`,"requestId":`)
		w.Str(req.RequestID)
	}
	if req.Retry {
		w.Raw(`,"retry":true`)
	}
	if req.Settle {
		w.Raw(`,"settle":true`)
	}
	w.Raw(`}`)
	if b, ok := w.Bytes(); ok {
		return b
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic("capacity: encoding an acquire: " + err.Error()) // strings and integers always encode
	}
	return append(dst, b...)
}

// DecodeAcquireRequest is json.Unmarshal(data, &req) (strict: workerapi.DecodeStrict's
// answer), reading the canonical form without reflection.
func DecodeAcquireRequest(data []byte, strict bool) (AcquireRequest, error) {
	if req, ok := readAcquireRequest(data); ok {
		return req, nil
	}
	var req AcquireRequest
	var err error
	if strict {
		err = workerapi.DecodeStrict(data, &req)
	} else {
		err = json.Unmarshal(data, &req)
	}
	return req, err
}

// readAcquireRequest reads the canonical form AppendJSON writes; false for any other body.
func readAcquireRequest(data []byte) (AcquireRequest, bool) {
	var req AcquireRequest
	var limit int64
	r := workerapi.NewCanonReader(data)
	r.Need(`{"cluster":`)
	r.Word(&req.Cluster)
	r.Need(`,"cap":`)
	r.Int(&limit)
	r.Need(`,"ttlMillis":`)
	r.Int(&req.TTLMillis)
	if r.Lit(`,"holder":`) {
		r.Str(&req.Holder)
	}
	if r.Lit(`,"waitMillis":`) {
		r.Int(&req.WaitMillis)
	}
	if r.Lit(`,"release":[`) {
		for {
			var ref LeaseRef
			r.Need(`{"id":`)
			if !r.Str(&ref.ID) {
				break
			}
			r.Need(`,"generation":`)
			r.Int(&ref.Generation)
			r.Need(`}`)
			req.Release = append(req.Release, ref)
			if !r.Lit(`,`) {
				break
			}
		}
		r.Need(`]`)
	}
	if r.Lit(`,"requestId":`) {
		r.Word(&req.RequestID)
	}
	if r.Lit(`,"retry":`) {
		r.Bool(&req.Retry)
	}
	if r.Lit(`,"settle":`) {
		r.Bool(&req.Settle)
	}
	r.Need(`}`)
	if !r.End() || limit != int64(int(limit)) {
		return AcquireRequest{}, false
	}
	req.Cap = int(limit)
	return req, true
}

// AppendJSON appends json.Marshal(resp) to dst, without reflection.
func (resp *AcquireResponse) AppendJSON(dst []byte) []byte {
	w := workerapi.NewCanonWriter(dst)
	w.Raw(`{"granted":`)
	w.Bool(resp.Granted)
	if l := resp.Lease; l != nil {
		w.Raw(`,"lease":{"id":`)
		w.Str(l.ID)
		w.Raw(`,"cluster":`)
		w.Str(l.Cluster)
		w.Raw(`,"holder":`)
		w.Str(l.Holder)
		w.Raw(`,"generation":`)
		w.Int(l.Generation)
		w.Raw(`,"expiresAt":`)
		w.Time(l.ExpiresAt)
		if l.TTLMillis != 0 {
			w.Raw(`,"ttlMillis":`)
			w.Int(l.TTLMillis)
		}
		if l.Revoked {
			w.Raw(`,"revoked":true`)
		}
		if l.Fleet != "" {
			w.Raw(`,"fleet":`)
			w.Str(l.Fleet)
		}
		w.Raw(`}`)
	}
	if resp.Contended != nil {
		w.Raw(`,"contended":`)
		w.Bool(*resp.Contended)
	}
	w.Raw(`}`)
	if b, ok := w.Bytes(); ok {
		return b
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic("capacity: encoding an acquire's answer: " + err.Error()) // a time json refuses: a programming error
	}
	return append(dst, b...)
}

// DecodeAcquireResponse is json.Unmarshal(data, &resp), reading the canonical form (and the
// newline WriteJSON ends it with) without reflection.
func DecodeAcquireResponse(data []byte) (AcquireResponse, error) {
	if resp, ok := readAcquireResponse(data); ok {
		return resp, nil
	}
	var resp AcquireResponse
	err := json.Unmarshal(data, &resp)
	return resp, err
}

func readAcquireResponse(data []byte) (AcquireResponse, bool) {
	var resp AcquireResponse
	r := workerapi.NewCanonReader(data)
	r.Need(`{"granted":`)
	r.Bool(&resp.Granted)
	if r.Lit(`,"lease":{"id":`) {
		l := &Lease{}
		r.Str(&l.ID)
		r.Need(`,"cluster":`)
		r.Word(&l.Cluster)
		r.Need(`,"holder":`)
		r.Str(&l.Holder)
		r.Need(`,"generation":`)
		r.Int(&l.Generation)
		r.Need(`,"expiresAt":`)
		r.Time(&l.ExpiresAt)
		if r.Lit(`,"ttlMillis":`) {
			r.Int(&l.TTLMillis)
		}
		if r.Lit(`,"revoked":`) {
			r.Bool(&l.Revoked)
		}
		if r.Lit(`,"fleet":`) {
			r.Word(&l.Fleet)
		}
		r.Need(`}`)
		resp.Lease = l
	}
	if r.Lit(`,"contended":`) {
		c := new(bool)
		r.Bool(c)
		resp.Contended = c
	}
	r.Need(`}`)
	r.Lit("\n")
	if !r.End() {
		return AcquireResponse{}, false
	}
	return resp, true
}

// A worker's releases go in batches, one for about every query it ran: after the acquire the
// capacity API's most frequent call, and its request was decoded strictly by reflection (a
// json.Decoder, its scanner and its values: 14 allocations a batch). Its request and answer
// have a codec of their own as the acquire's do, held to encoding/json by
// TestReleaseBatchCodecIsEncodingJSON.

// AppendJSON appends json.Marshal(req) to dst, without reflection.
func (req *ReleaseBatchRequest) AppendJSON(dst []byte) []byte {
	w := workerapi.NewCanonWriter(dst)
	switch {
	case req.Leases == nil:
		w.Raw(`{"leases":null`)
	case len(req.Leases) == 0:
		w.Raw(`{"leases":[]`)
	}
	for i, ref := range req.Leases {
		if i == 0 {
			w.Raw(`{"leases":[{"id":`)
		} else {
			w.Raw(`,{"id":`)
		}
		w.Str(ref.ID)
		w.Raw(`,"generation":`)
		w.Int(ref.Generation)
		w.Raw(`}`)
		if i == len(req.Leases)-1 {
			w.Raw(`]`)
		}
	}
	w.Raw(`}`)
	if b, ok := w.Bytes(); ok {
		return b
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic("capacity: encoding a release batch: " + err.Error()) // strings and integers always encode
	}
	return append(dst, b...)
}

// DecodeReleaseBatchRequest is workerapi.DecodeStrict(data, &req)'s answer, reading the
// canonical form without reflection.
func DecodeReleaseBatchRequest(data []byte) (ReleaseBatchRequest, error) {
	if req, ok := readReleaseBatchRequest(data); ok {
		return req, nil
	}
	var req ReleaseBatchRequest
	err := workerapi.DecodeStrict(data, &req)
	return req, err
}

// readReleaseBatchRequest reads the canonical form AppendJSON writes for a batch of one or
// more leases (an empty or null batch, and any other body: false).
func readReleaseBatchRequest(data []byte) (ReleaseBatchRequest, bool) {
	var req ReleaseBatchRequest
	r := workerapi.NewCanonReader(data)
	r.Need(`{"leases":[`)
	for {
		var ref LeaseRef
		r.Need(`{"id":`)
		if !r.Str(&ref.ID) {
			return ReleaseBatchRequest{}, false
		}
		r.Need(`,"generation":`)
		if !r.Int(&ref.Generation) {
			return ReleaseBatchRequest{}, false
		}
		r.Need(`}`)
		req.Leases = append(req.Leases, ref)
		if !r.Lit(`,`) {
			break
		}
	}
	r.Need(`]}`)
	if !r.End() {
		return ReleaseBatchRequest{}, false
	}
	return req, true
}

// AppendJSON appends json.Marshal(resp) to dst.
func (resp ReleaseBatchResponse) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"released":`...)
	dst = strconv.AppendInt(dst, int64(resp.Released), 10)
	return append(dst, '}')
}

// DecodeReleaseBatchResponse is json.Unmarshal(data, &resp)'s answer, reading the canonical
// form (and a newline after it, as WriteJSON writes) without reflection.
func DecodeReleaseBatchResponse(data []byte) (ReleaseBatchResponse, error) {
	r := workerapi.NewCanonReader(data)
	var n int64
	r.Need(`{"released":`)
	ok := r.Int(&n)
	r.Need(`}`)
	r.Lit("\n")
	if ok && r.End() && n == int64(int(n)) {
		return ReleaseBatchResponse{Released: int(n)}, nil
	}
	var resp ReleaseBatchResponse
	err := json.Unmarshal(data, &resp)
	return resp, err
}
