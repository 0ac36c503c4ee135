package workerapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// BearerToken returns the token of an "Authorization: Bearer <token>" header.
func BearerToken(r *http.Request) (string, bool) {
	h := headerValue(r.Header, "Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// headerValue is h.Get(key) for a key in canonical form (a literal such as "Authorization"),
// which Get would canonicalize again, byte by byte, on every call: a control plane reads the
// token and the media type of every request of every worker (about 1 % of the instructions of a
// simulated 1,000-worker fleet).
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SetBearer sets the Authorization header of req to a bearer token.
func SetBearer(req *http.Request, token string) {
	req.Header.Set("Authorization", "Bearer "+token)
}

// TokenEqual compares two secrets in constant time. Both are hashed first, so neither the
// content nor the length of the expected secret leaks through timing.
func TokenEqual(got, want string) bool {
	if want == "" {
		return false // an unset secret never matches, not even an empty one
	}
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// TokenHash is the hex SHA-256 of a token: what the control plane stores and indexes instead
// of the token itself.
func TokenHash(token string) string {
	var b [2 * sha256.Size]byte
	return string(AppendTokenHash(b[:0], token))
}

// AppendTokenHash appends TokenHash(token) to dst. Into a buffer on the caller's stack it
// allocates nothing for tokens up to 64 bytes (the control plane's are 47): a control plane
// hashes the token of every request of every worker, to look its session up.
func AppendTokenHash(dst []byte, token string) []byte {
	var buf [64]byte
	h := sha256.Sum256(append(buf[:0], token...)) // the stack's buffer, not a copy on the heap
	return hex.AppendEncode(dst, h[:])
}

// ReadBody reads a request body up to BodyBytesMax after checking its media type. The error is a
// *FieldError; StatusFor says which HTTP status it deserves.
func ReadBody(r *http.Request, mediaType string) ([]byte, error) {
	if err := CheckMediaType(headerValue(r.Header, "Content-Type"), mediaType); err != nil {
		return nil, err
	}
	data, err := ReadAtMost(r.Body, r.ContentLength, BodyBytesMax+1)
	if err != nil {
		return nil, fieldErr("", "reading body: %v", err)
	}
	if len(data) > BodyBytesMax {
		return nil, &FieldError{Field: "", Msg: fmt.Sprintf("body larger than %d bytes", BodyBytesMax)}
	}
	if !utf8.Valid(data) { // encoding/json, and the endpoints' own readers, would take it altered
		return nil, CheckBody(data)
	}
	return data, nil
}

// ReadJSON reads a request body of mediaType (ReadBody) and decodes it strictly into v: one
// JSON object, no unknown or case-mismatched keys, no wrong types, nothing after it. The error
// names what was wrong (a *FieldError, or a *MediaTypeError); WriteBadRequest answers it.
func ReadJSON(r *http.Request, mediaType string, v any) error {
	data, err := ReadBody(r, mediaType)
	if err != nil {
		return err
	}
	return decodeStrict(data, v)
}

// MediaTypeError is a Content-Type the endpoint does not take (HTTP 415).
type MediaTypeError struct{ Got, Want string }

func (e *MediaTypeError) Error() string {
	return fmt.Sprintf("Content-Type %q not supported: send %s", e.Got, e.Want)
}

// CheckMediaType accepts contentType if it names want (parameters such as charset ignored).
// want is a media type as mime.ParseMediaType returns one: lower case, no parameters (the
// Media* constants).
func CheckMediaType(contentType, want string) error {
	if contentType == want {
		// What our own clients send, byte for byte: ParseMediaType would only return it again,
		// after making a map for its parameters (a control plane checks every heartbeat of every
		// worker: 1 % of a simulated 1,000-worker fleet's CPU).
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.EqualFold(mt, want) {
		return &MediaTypeError{Got: contentType, Want: want}
	}
	return nil
}

// WriteJSON writes v as a JSON body of the given media type.
func WriteJSON(w http.ResponseWriter, status int, mediaType string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("workerapi: encoding %T: %v", v, err)) // our own types always encode
	}
	SetContentType(w.Header(), mediaType)
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// SetContentType sets h's Content-Type to mediaType, as h.Set("Content-Type", mediaType) does;
// the value of one of this package's media types is a slice shared by every header it is set
// in (nothing on an answer's way writes into a header's values, as with the worker's request
// headers): a control plane answers every heartbeat and lease request of every worker with
// one, and a new slice for each was tens of thousands of allocations a simulated second.
func SetContentType(h http.Header, mediaType string) {
	for _, v := range sharedContentTypes {
		if v[0] == mediaType {
			h["Content-Type"] = v
			return
		}
	}
	h["Content-Type"] = []string{mediaType}
}

// sharedContentTypes are the Content-Type values SetContentType shares, the most frequent first.
var sharedContentTypes = [...][]string{{MediaHeartbeatAck}, {MediaError}, {MediaWorkerRegistered},
	{MediaWorkerList}, {MediaWorkerInfo}, {MediaWorkerStatus}, {MediaWorkerPeers}}

// WriteHeartbeatAck writes WriteJSON's answer to a heartbeat, encoded without reflection.
func WriteHeartbeatAck(w http.ResponseWriter, ack HeartbeatAck) {
	data, err := AppendHeartbeatAck(make([]byte, 0, 160), &ack) // room for a revision and the '\n'
	if err != nil {
		panic(fmt.Sprintf("workerapi: encoding a heartbeat answer: %v", err)) // a non-finite interval: a programming error
	}
	w.Header()["Content-Type"] = sharedContentTypes[0] // SetContentType(w.Header(), MediaHeartbeatAck)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(data, '\n'))
}

// WriteError writes {"error": msg, "field": field}.
func WriteError(w http.ResponseWriter, status int, msg, field string) {
	WriteJSON(w, status, MediaError, ErrorBody{Error: msg, Field: field})
}

// WriteBadRequest answers a decoding or validation error: 415 for a wrong media type, else 400
// naming the field.
func WriteBadRequest(w http.ResponseWriter, err error) {
	var mt *MediaTypeError
	if errors.As(err, &mt) {
		WriteError(w, http.StatusUnsupportedMediaType, mt.Error(), "Content-Type")
		return
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		WriteError(w, http.StatusBadRequest, fe.Error(), fe.Field)
		return
	}
	WriteError(w, http.StatusBadRequest, err.Error(), "")
}

// ReadError decodes an error answer; it never fails, falling back to the status text.
func ReadError(resp *http.Response) ErrorBody {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body ErrorBody
	if json.Unmarshal(data, &body) != nil || body.Error == "" {
		body.Error = http.StatusText(resp.StatusCode)
	}
	return body
}

// StatusError is a non-2xx answer of the worker or admin API.
type StatusError struct {
	Status int
	Body   ErrorBody
	// RetryAfter is how long a 429 or 503 asked the client to wait before trying again (its
	// Retry-After header, ResponseError); 0 when it did not say, or said nothing readable.
	RetryAfter time.Duration
}

// RetryAfterMax bounds the wait a Retry-After header can impose: a control plane that asks
// for more (or a garbled header that reads as more) still hears from its workers every minute.
const RetryAfterMax = 60 * time.Second

// ResponseError is the *StatusError of resp, a non-2xx answer: its status, its error body
// (ReadError), and for a 429 or a 503 the wait its Retry-After header asks for, delay-seconds
// or an HTTP date (read against now, the caller's clock), at most RetryAfterMax. A header that
// is absent, garbled, negative or in the past leaves RetryAfter 0: the caller's own backoff.
func ResponseError(resp *http.Response, now time.Time) *StatusError {
	e := &StatusError{Status: resp.StatusCode, Body: ReadError(resp)}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		e.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	return e
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 10.2.3): delay-seconds or an HTTP date,
// the latter against now; the wait, at most RetryAfterMax, 0 for anything else.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		d = RetryAfterMax
		if secs < uint64(RetryAfterMax/time.Second) {
			d = time.Duration(secs) * time.Second
		}
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), RetryAfterMax)
}

// RetryAfter is the wait err (a *StatusError, wrapped or not) asks for; 0 for none.
func RetryAfter(err error) time.Duration {
	var se *StatusError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}

func (e *StatusError) Error() string {
	if e.Body.Field != "" {
		return fmt.Sprintf("HTTP %d: %s (field %s)", e.Status, e.Body.Error, e.Body.Field)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body.Error)
}

// ReadAtMost is ReadAllHint(io.LimitReader(r, limit), hint, limit): at most limit bytes of r,
// read into a buffer sized from an announced length (hint; none when <= 0), without the
// LimitedReader (an allocation for every request and answer a control plane and its workers
// read: tens of thousands a simulated second in a fleet of 1,000).
func ReadAtMost(r io.Reader, hint, limit int64) ([]byte, error) {
	size := int64(512) // io.ReadAll's first buffer
	if hint > 0 {
		size = min(hint, limit) + 1 // +1: the EOF probe needs room
	}
	b := make([]byte, 0, max(size, 1))
	for {
		left := limit - int64(len(b))
		if left <= 0 {
			return b, nil // what LimitedReader answers once its bytes are read: EOF
		}
		room := b[len(b):cap(b)]
		if int64(len(room)) > left {
			room = room[:left]
		}
		n, err := r.Read(room)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
	}
}

// ReadAllHint is io.ReadAll with the buffer sized from an announced length (clamped to max), so a
// heartbeat body is read into one allocation instead of a growing series. A wrong hint only
// costs a regrow.
func ReadAllHint(r io.Reader, hint int64, max int64) ([]byte, error) {
	if hint <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(hint, max)+1) // +1: the EOF probe needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
	}
}
