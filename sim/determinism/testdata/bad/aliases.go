package bad

import (
	ctxpkg "context"
	cr "crypto/rand"
	r1 "math/rand"
	mrand "math/rand/v2"
	tm "time"
)

// A renamed import hides the package name, not the object; a function value is a use.
var now = tm.Now // want "time.Now"

type worker struct{}

func (worker) run()                     {}
func generic[T any](x T)                {}
func since(f func(tm.Time) tm.Duration) {}

func Aliases(ctx ctxpkg.Context, w worker) {
	f := tm.Now // want "time.Now"
	_ = f()
	since(tm.Since)                                     // want "time.Since"
	_ = tm.Tick(tm.Second)                              // want "time.Tick"
	_ = tm.After(tm.Second)                             // want "time.After"
	_ = tm.AfterFunc(tm.Second, func() {})              // want "time.AfterFunc"
	_ = tm.NewTimer(tm.Second)                          // want "time.NewTimer"
	_ = tm.NewTicker(tm.Second)                         // want "time.NewTicker"
	_, c1 := ctxpkg.WithDeadline(ctx, tm.Time{})        // want "context.WithDeadline"
	_, c2 := ctxpkg.WithCancelCause(ctx)                // want "context.WithCancelCause"
	_ = ctxpkg.AfterFunc(ctx, func() {})                // want "context.AfterFunc"
	_ = r1.Int()                                        // want "math/rand.Int"
	_ = r1.New(r1.NewSource(int64(now().Nanosecond()))) // fine: the seed's source is flagged where it is read
	_ = mrand.N(10)                                     // want "math/rand/v2.N"
	_ = cr.Reader                                       // want "crypto/rand.Reader"
	go w.run()                                          // want "go statement"
	go generic(1)                                       // want "go statement"
	go func() {}()                                      // want "go statement"
	select {                                            // want "select statement"
	case <-ctx.Done(): // want "channel receive"
	default:
	}
	c1()
	c2(nil)
}
