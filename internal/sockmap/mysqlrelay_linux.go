//go:build linux

package sockmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
)

// RelayMySQL relays one MySQL client to its engine with the engine's answers spliced: the
// login in user space (greeting, the client's response, any auth switch or more-data rounds,
// up to the engine's OK), then the pair spliced, and from there each client packet read,
// shown to request with the end of the answer before it (zero before the first), and written
// to the engine, until the client ends (COM_QUIT, a close) or request returns an error. A
// client that asks for TLS is refused (its bytes could not be followed). The shape of a proxy
// that sees every request and none of the answers' bytes.
func RelayMySQL(s *ResultSplicer, client, engine *net.TCPConn, request func(packet []byte, prev End) error) error {
	cr := bufio.NewReaderSize(client, 16<<10)
	p, err := SpliceMySQL(s, client, engine, cr)
	if err != nil {
		return err
	}
	defer func() { _ = p.Unsplice() }()
	var prev End
	var pkt []byte
	for {
		if pkt, err = readPacket(cr, pkt[:0]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if p.Ends() != prev.Seq {
			prev = p.LastEnd()
		}
		if prev.Lost {
			return errors.New("sockmap: the answers' framing was lost")
		}
		if err := request(pkt, prev); err != nil {
			return err
		}
		if _, err := engine.Write(pkt); err != nil {
			return err
		}
		if len(pkt) == 5 && pkt[4] == 0x01 { // COM_QUIT
			return nil
		}
	}
}

// SpliceMySQL relays a MySQL login in user space (the engine's greeting, the client's
// response, auth switch and more-data rounds, up to the engine's OK), reading the client
// through cr, and then splices the engine's answers to the client. The client has sent nothing
// more when the login ends (it waits for the OK), so cr holds nothing the pair still owes.
func SpliceMySQL(s *ResultSplicer, client, engine *net.TCPConn, cr *bufio.Reader) (*ResultPair, error) {
	er := bufio.NewReaderSize(engine, 4<<10)
	greeting, err := readPacket(er, nil)
	if err != nil {
		return nil, fmt.Errorf("sockmap: the engine's greeting: %w", err)
	}
	if err := withoutDeprecateEOF(greeting); err != nil {
		return nil, err
	}
	if _, err := client.Write(greeting); err != nil {
		return nil, err
	}
	var pkt []byte
	for login := true; login; {
		if pkt, err = readPacket(cr, pkt[:0]); err != nil {
			return nil, fmt.Errorf("sockmap: the client's login: %w", err)
		}
		if len(pkt) == 4+32 && pkt[5]&0x08 != 0 { // CLIENT_SSL, in a short SSLRequest
			return nil, errors.New("sockmap: the client asked for TLS, which a spliced pair cannot follow")
		}
		if _, err := engine.Write(pkt); err != nil {
			return nil, err
		}
		for {
			if pkt, err = readPacket(er, pkt[:0]); err != nil {
				return nil, fmt.Errorf("sockmap: the engine's login: %w", err)
			}
			if _, err := client.Write(pkt); err != nil {
				return nil, err
			}
			switch {
			case len(pkt) > 4 && pkt[4] == 0xff:
				return nil, errors.New("sockmap: the engine refused the login")
			case len(pkt) > 4 && pkt[4] == 0x00:
				login = false
			case len(pkt) == 6 && pkt[4] == 0x01 && pkt[5] == 0x03: // fast auth: the OK follows
				continue
			}
			break
		}
	}
	if er.Buffered() > 0 || cr.Buffered() > 0 {
		return nil, errors.New("sockmap: bytes past the login's end")
	}
	return s.Splice(ConnFD(client), ConnFD(engine))
}

// withoutDeprecateEOF takes CLIENT_DEPRECATE_EOF out of a greeting's capabilities, so that
// the client does not ask for it and every result ends as the program reads it: with an EOF
// (an OK led by 0xFE in its place is not told from an EOF by its length).
func withoutDeprecateEOF(greeting []byte) error {
	p := greeting[4:]
	if len(p) < 1 || p[0] != 10 {
		return errors.New("sockmap: the engine's greeting is not a protocol 10 handshake")
	}
	end := bytes.IndexByte(p[1:], 0)
	// server version, NUL, connection id (4), auth data (8), filler (1), capabilities' low
	// half (2), character set (1), status (2), capabilities' high half (2)
	at := 1 + end + 1 + 4 + 8 + 1 + 2 + 1 + 2
	if end < 0 || len(p) < at+2 {
		return errors.New("sockmap: the engine's greeting is too short")
	}
	p[at+1] &^= 1 // CLIENT_DEPRECATE_EOF, bit 24
	return nil
}

// readPacket appends one packet, header included, to buf.
func readPacket(r *bufio.Reader, buf []byte) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return buf, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	buf = append(buf, h[:]...)
	at := len(buf)
	buf = append(buf, make([]byte, n)...)
	_, err := io.ReadFull(r, buf[at:])
	return buf, err
}
