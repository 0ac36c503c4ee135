package httplite

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// bodyHeldMax is how much of an answer's body is held back to go out with its head, in one
// write and with a Content-Length; past it (or at a Flush) the head goes out and the rest
// streams, chunked unless the handler set a Content-Length.
const bodyHeldMax = 64 << 10

// heldKeptMax bounds the array a connection keeps for its answers' held bodies (conn.held):
// a short answer's, not the largest one it ever held.
const heldKeptMax = 4 << 10

// response is the http.ResponseWriter of one request.
type response struct {
	c       *conn
	req     *http.Request
	header  http.Header
	status  int    // 0 until WriteHeader
	body    []byte // held until the head goes out
	sent    bool   // the head went out
	chunked bool
	length  int64 // the Content-Length the handler set; -1: none
	written int64 // body bytes the handler wrote
	noBody  bool  // a HEAD request, or a 204 or 304 answer
	close   bool  // the connection ends after this answer
	err     error // a write to the client failed
	done    bool  // finished: the answer went out whole

	// contentType is the Content-Type SetContentType gave, written when the header has none.
	contentType string

	reqBody   *body  // nil for a request without one
	watched   bool   // Options.Watch named the request
	onBodyEnd func() // starts the watch once a watched request's body ended
	hand      *hand  // set by Detach: the connection's hand-over

	// What reqBody and hand point to: one allocation with the answer's.
	bodyKept body
	handKept hand
}

// errFinished is what a handler's write gets once its answer went out (Detach).
var errFinished = errors.New("httplite: the answer was finished")

// keep reports whether the connection can serve another request after this answer.
func (w *response) keep() bool {
	return !w.close && w.err == nil && (w.reqBody == nil || w.reqBody.drain())
}

func (w *response) Header() http.Header { return w.header }

// SetContentType has w's answer say Content-Type ct unless its header names one by the time
// its head goes out, without a field in its header: a handler whose answers have no other
// field then costs its server no map work at all (setting the field, ranging over it, the
// lookups and the clear of each answer: ~500 instructions of a Trino statement's answer). It
// reports false for an answer of another server, which the caller gives the field instead.
func SetContentType(w http.ResponseWriter, ct string) bool {
	rw, ok := w.(*response)
	if ok {
		rw.contentType = ct
	}
	return ok
}

// WriteHeader sets the status; a second call is ignored, and so are 1xx answers (a handler's
// 103 Early Hints, say), which this server does not send.
func (w *response) WriteHeader(status int) {
	if status < 100 || status > 999 {
		panic(fmt.Sprintf("httplite: invalid WriteHeader code %v", status))
	}
	if w.status != 0 || status < 200 {
		return
	}
	w.status = status
	if cl := Field(w.header, "Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.length = n
		} else {
			w.header.Del("Content-Length")
		}
	}
	w.noBody = w.req.Method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified
}

func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.done:
		return 0, errFinished
	case w.err != nil:
		return 0, w.err
	case w.noBody && w.req.Method == http.MethodHead:
		return len(p), nil
	case w.noBody:
		return 0, http.ErrBodyNotAllowed
	case w.length >= 0 && w.written+int64(len(p)) > w.length:
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.sent {
		if len(w.body)+len(p) <= bodyHeldMax {
			w.body = append(w.body, p...)
			return len(p), nil
		}
		w.writeHead(false)
	}
	w.writeBody(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// Flush sends the head and what the body has so far.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting a failed write (http.ResponseController calls it).
func (w *response) FlushError() error {
	if w.done {
		return errFinished
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		w.writeHead(false)
	} else {
		w.c.armWrite(time.Now())
	}
	if err := w.c.bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error {
	w.c.readSoft = time.Time{}
	return w.c.rwc.SetReadDeadline(t)
}

func (w *response) SetWriteDeadline(t time.Time) error {
	w.c.writeSoft = time.Time{}
	return w.c.rwc.SetWriteDeadline(t)
}

// finish ends the answer once the handler returned: its head and body if none went out yet,
// the last chunk and the trailers, then one flush to the client.
func (w *response) finish() {
	w.done = true
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		w.writeHead(true)
	}
	bw := w.c.bw
	if w.chunked {
		_, _ = bw.WriteString("0\r\n")
		for _, name := range w.trailerNames() {
			for _, v := range w.header[name] {
				writeField(bw, name, v)
			}
		}
		for k, vv := range w.header {
			if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
				for _, v := range vv {
					writeField(bw, name, v)
				}
			}
		}
		_, _ = bw.WriteString("\r\n")
	}
	if w.length >= 0 && w.written != w.length && !w.noBody {
		w.close = true // short of what the head promised: the client must not read on
	}
	if err := bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
}

// trailerNames are the fields the handler announced in its Trailer header.
func (w *response) trailerNames() []string {
	var names []string
	for _, v := range w.header["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, http.CanonicalHeaderKey(name))
			}
		}
	}
	return names
}

// writeHead writes the status line and the head; final means the handler returned, so a body
// held whole gets its Content-Length.
func (w *response) writeHead(final bool) {
	w.sent = true
	h := w.header
	c := w.c
	now := time.Now() // one clock read for the write deadline and the Date field
	c.armWrite(now)
	bw := c.bw
	// The whole head is made in bw's free buffer and written at once (one copy, no call per
	// part: 2,900 instructions of a statement's answer were 4,000). The fields that decide the
	// framing (Connection, Trailer, Content-Type) are read in the one pass that writes the
	// others: a lookup each was ~450 instructions of every answer.
	b := append(bw.AvailableBuffer(), "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(append(append(b, ' '), http.StatusText(w.status)...), "\r\n"...)
	connClose, trailer, typed := false, false, false
	for k, vv := range h {
		switch {
		case k == "Connection":
			connClose = len(vv) > 0 && strings.EqualFold(vv[0], "close")
			continue
		case k == "Transfer-Encoding", strings.HasPrefix(k, http.TrailerPrefix):
			continue
		case k == "Content-Length" && w.length < 0 && !w.noBody:
			// Set after WriteHeader: the framing below is the server's (its own Content-Length,
			// chunks, or the connection's end), not a second length the body may not have.
			continue
		case k == "Trailer":
			trailer = len(vv) > 0
		case k == "Content-Type":
			typed = true
		}
		for _, v := range vv {
			b = appendField(b, k, v)
		}
	}
	if w.req.Close || connClose || c.s.closing.Load() || w.status == http.StatusUnauthorized {
		// A client that failed to authenticate holds no connection past its answer (as
		// netlimit.HTTP does for net/http).
		w.close = true
	}
	length := false // a Content-Length of the body held whole
	switch {
	case w.noBody, w.length >= 0:
	case final && !trailer:
		length = true
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
	default:
		w.close = true // an HTTP/1.0 client reads the body to the connection's end
	}
	if !typed && w.contentType != "" {
		typed = true
		b = appendField(b, "Content-Type", w.contentType)
	}
	if !typed && len(w.body) > 0 && !w.noBody {
		ct := http.DetectContentType(w.body)
		h.Set("Content-Type", ct)
		b = appendField(b, "Content-Type", ct)
	}
	b = append(b, date(now)...)
	switch {
	case length:
		b = append(strconv.AppendInt(append(b, "Content-Length: "...), int64(len(w.body)), 10), "\r\n"...)
	case w.chunked:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	switch {
	case w.close:
		b = append(b, "Connection: close\r\n"...)
	case !w.req.ProtoAtLeast(1, 1):
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	_, _ = bw.Write(append(b, "\r\n"...))
	if !w.noBody {
		w.writeBody(w.body)
	}
	if cap(w.body) <= heldKeptMax { // bw copied it: the connection's next answer may hold its body there
		c.held = w.body[:0]
	}
	w.body = nil
}

// writeBody writes p as the body goes: a chunk, or as it is.
func (w *response) writeBody(p []byte) {
	if len(p) == 0 || w.err != nil {
		return
	}
	bw := w.c.bw
	if w.chunked {
		_, _ = bw.Write(append(strconv.AppendInt(w.c.scratch[:0], int64(len(p)), 16), '\r', '\n'))
	}
	_, err := bw.Write(p)
	if w.chunked && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	if err != nil {
		w.err = err
	}
}

// writeField writes one header field, leaving out a name that is not one and turning line
// breaks in a value into spaces (no field can smuggle in another).
func writeField(bw interface {
	Write([]byte) (int, error)
	AvailableBuffer() []byte
}, name, value string) {
	_, _ = bw.Write(appendField(bw.AvailableBuffer(), name, value))
}

// appendField appends one header field as writeField writes it.
func appendField(b []byte, name, value string) []byte {
	if !httpguts.ValidHeaderFieldName(name) {
		return b
	}
	b = append(append(b, name...), ": "...)
	if strings.IndexByte(value, '\r') < 0 && strings.IndexByte(value, '\n') < 0 {
		b = append(b, value...)
	} else {
		for i := 0; i < len(value); i++ {
			switch c := value[i]; c {
			case '\r', '\n':
				b = append(b, ' ')
			default:
				b = append(b, c)
			}
		}
	}
	return append(b, "\r\n"...)
}

// armWrite gives the writes of an answer MessageTimeout (re-armed at each Flush), so that a
// client that stops reading holds its connection no longer than that.
func (c *conn) armWrite(now time.Time) {
	c.extendWrite(c.s.opts.Limits.MessageTimeout, now)
}

// dateField is the Date field of the current second, made once a second.
type dateField struct {
	sec  int64
	line []byte
}

var dates atomic.Pointer[dateField]

// date is the Date field of now.
func date(now time.Time) []byte {
	if d := dates.Load(); d != nil && d.sec == now.Unix() {
		return d.line
	}
	d := &dateField{sec: now.Unix(), line: now.UTC().AppendFormat([]byte("Date: "), http.TimeFormat)}
	d.line = append(d.line, "\r\n"...)
	dates.Store(d)
	return d.line
}
