// Package enginetest holds test doubles of the engine interfaces that several packages' tests
// share.
//
// determinism: outside the simulator (test helpers)
package enginetest

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

var _ engine.PGWire = NopWire{}

// NopWire is an engine connection that relays nothing: for tests and benchmarks of the
// proxy's bookkeeping around the bytes.
type NopWire struct{}

func (NopWire) Execute(context.Context, *query.Request) (query.Rows, error) {
	return nil, errors.New("enginetest.NopWire: relay only")
}
func (NopWire) TxStatus() byte                        { return 'I' }
func (NopWire) Close() error                          { return nil }
func (NopWire) Send([]byte)                           {}
func (NopWire) Flush() error                          { return nil }
func (NopWire) Next() ([]byte, error)                 { return nil, io.EOF }
func (NopWire) SetReadDeadline(time.Time) error       { return nil }
func (NopWire) Cancel()                               {}
func (NopWire) Discard()                              {}
func (NopWire) Statement(string, bool) (string, bool) { return "", false }
func (NopWire) Forget(string)                         {}
func (NopWire) ForgetAll()                            {}
