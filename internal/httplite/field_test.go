package httplite

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
	"pgregory.net/rapid"
)

// writeFieldAsBefore is how an answer's field was written before its head was made in one
// buffer: the reference appendField must write as.
func writeFieldAsBefore(bw *bytes.Buffer, name, value string) {
	if !httpguts.ValidHeaderFieldName(name) {
		return
	}
	if strings.ContainsAny(value, "\r\n") {
		value = strings.NewReplacer("\r", " ", "\n", " ").Replace(value)
	}
	bw.WriteString(name)
	bw.WriteString(": ")
	bw.WriteString(value)
	bw.WriteString("\r\n")
}

// appendField writes a field as writeField wrote it: an invalid name left out, every CR and LF
// of a value (wherever it is, alone or in pairs) a space.
func TestAppendFieldWritesAsWriteFieldDid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.SampledFrom([]string{"X-Trino-User", "Content-Type", "x_y", "Bad Name", "", "é", "X:Y", "A\r\nB"}).Draw(rt, "name")
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{"a", " ", "\r", "\n", "\r\n", "é", "\t", "X-Smuggled: 1"}), 0, 12).Draw(rt, "value")
		value := strings.Join(parts, "")
		prefix := rapid.SampledFrom([]string{"", "HTTP/1.1 200 OK\r\n"}).Draw(rt, "prefix")
		var want bytes.Buffer
		want.WriteString(prefix)
		writeFieldAsBefore(&want, name, value)
		if got := appendField([]byte(prefix), name, value); !bytes.Equal(got, want.Bytes()) {
			rt.Fatalf("appendField(%q, %q) = %q, want %q", name, value, got, want.Bytes())
		}
		var bw bytes.Buffer
		bw.WriteString(prefix)
		writeField(&bw, name, value)
		if !bytes.Equal(bw.Bytes(), want.Bytes()) {
			rt.Fatalf("writeField(%q, %q) = %q, want %q", name, value, bw.Bytes(), want.Bytes())
		}
	})
}

// A head larger than the connection's write buffer (many fields, long values) goes out whole
// and in order, and the connection serves its next request.
func TestAHeadLargerThanTheWriteBuffer(t *testing.T) {
	const fields = 300
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range fields {
			w.Header().Add(fmt.Sprintf("X-F%03d", i), strings.Repeat(string(rune('a'+i%26)), 40))
		}
		_, _ = io.WriteString(w, "body")
	}), Options{})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	for range 2 {
		_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := read(t, br, "")
		if body != "body" {
			t.Fatalf("body %q", body)
		}
		for i := range fields {
			if got, want := resp.Header.Get(fmt.Sprintf("X-F%03d", i)), strings.Repeat(string(rune('a'+i%26)), 40); got != want {
				t.Fatalf("field %d: %q, want %q", i, got, want)
			}
		}
	}
}

// valueBytes, eight bytes at a time, finds what the check byte by byte finds: every control
// byte but tab, and 0x7f, at any place of a value of any length, among bytes on either side
// of them (0x1f, 0x20, 0x7e, 0x80, 0xff).
func TestValueBytesAsByteByByte(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		// A value of allowed bytes, and at times one byte more of any kind at any place.
		b := rapid.SliceOfN(rapid.SampledFrom([]byte{'a', ' ', '\t', 0x20, 0x7e, 0x80, 0xfe, 0xff}), 0, 40).Draw(rt, "value")
		if rapid.Bool().Draw(rt, "one more") {
			at := rapid.IntRange(0, len(b)).Draw(rt, "at")
			c := rapid.SampledFrom([]byte{0x00, 0x01, '\t', '\n', '\r', 0x1f, 0x20, 0x7e, 0x7f, 0x80}).Draw(rt, "byte")
			b = append(b[:at], append([]byte{c}, b[at:]...)...)
		}
		s := string(b)
		if got, want := valueBytes(s), valueBytesOneByOne(s); got != want {
			rt.Fatalf("valueBytes(%q) = %v, byte by byte %v", s, got, want)
		}
	})
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{"application/json", true}, {"a\tb c\td e\tf", true}, {"12345678\x7f", false}, {"1234567\x7f", false},
		{"\x00bcdefgh", false}, {"abcdefg\x1f", false}, {"abcdefgh\xff\x80", true}, {"héllo wörld ~~~~", true},
	} {
		if got := valueBytes(c.s); got != c.ok {
			t.Errorf("valueBytes(%q) = %v, want %v", c.s, got, c.ok)
		}
	}
}
