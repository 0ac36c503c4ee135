//go:build !linux

package sockmap

import "net"

// Splicer is not available off Linux.
type Splicer struct{}

// New always fails off Linux.
func New(int, bool) (*Splicer, error) { return nil, ErrUnsupported }

// Splice is never reached off Linux.
func (*Splicer) Splice(int, int) error { return ErrUnsupported }

// Unsplice is never reached off Linux.
func (*Splicer) Unsplice(int, int) error { return ErrUnsupported }

// Pending is never reached off Linux.
func Pending(int) (int, error) { return 0, ErrUnsupported }

// Close does nothing off Linux.
func (*Splicer) Close() error { return nil }

// ResultSplicer is not available off Linux.
type ResultSplicer struct{}

// End is what a result splice records of an answer's end.
type End struct {
	Seq, Forwarded uint64
	Rows, Bytes    int64
	Status         uint16
	ErrCode        uint16
	Last           []byte
	Lost           bool
}

// NewResults always fails off Linux.
func NewResults(int) (*ResultSplicer, error) { return nil, ErrUnsupported }

// Close does nothing off Linux.
func (*ResultSplicer) Close() error { return nil }

// RelayMySQL is never reached off Linux.
func RelayMySQL(*ResultSplicer, *net.TCPConn, *net.TCPConn, func([]byte, End) error) error {
	return ErrUnsupported
}
