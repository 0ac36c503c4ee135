//go:build !linux

package sockmap

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
