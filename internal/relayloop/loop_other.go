//go:build !linux

package relayloop

import (
	"errors"
	"syscall"
	"time"
)

// ErrStopped is a Result's Err when the pair was stopped from outside (Handle.Stop, Close).
var ErrStopped = errors.New("relayloop: stopped")

var errUnsupported = errors.New("relayloop: needs Linux (epoll)")

// Loop is an event loop; only Linux has one.
type Loop struct{}

// Handle is a pair running on a loop.
type Handle struct{}

// New fails outside Linux: callers relay with goroutines instead.
func New(int) (*Loop, error) { return nil, errUnsupported }

// NewOn fails outside Linux.
func NewOn(int, Backend) (*Loop, error) { return nil, errUnsupported }

// NewWith fails outside Linux.
func NewWith(int, Backend, time.Duration) (*Loop, error) { return nil, errUnsupported }

// Backend names a loop's way of waiting for its sockets (Linux only).
type Backend string

// BackendAuto, BackendEpoll and BackendURing name none outside Linux.
const (
	BackendAuto  Backend = ""
	BackendEpoll Backend = "epoll"
	BackendURing Backend = "uring"
)

func (l *Loop) Add(Pair) (*Handle, error) { return nil, errUnsupported }
func (l *Loop) Close()                    {}
func (h *Handle) Stop()                   {}
func (l *Loop) NewHandle() *Handle        { return &Handle{} }
func (h *Handle) Start(Pair) error        { return errUnsupported }
func (h *Handle) Resume(int)              {}
func (h *Handle) StopIf(func() bool)      {}
func (h *Handle) Plug(int) error          { return errUnsupported }
func (h *Handle) UnplugNow() bool         { return false }
func (h *Handle) Do(func())               {}
func (h *Handle) Writing(Direction) bool  { return false }

// Replacing is never called outside Linux: no pair runs.
func (h *Handle) Replacing([]byte) Verdict { return Replace }

// Answering is never called outside Linux: no pair runs.
func (h *Handle) Answering([]byte) Verdict { return Answer }

// Detach fails outside Linux.
func Detach(syscall.Conn) (int, error) { return -1, errUnsupported }

func closeFD(int) error    { return errUnsupported }
func shutdownFD(int) error { return errUnsupported }

// Release does nothing outside Linux: no loop keeps a socket.
func Release(int)   {}
func peek(int) bool { return false }

// read and write are never called outside Linux: no socket is ever lent.
func read(int, []byte) (int, syscall.Errno)  { return 0, syscall.EAGAIN }
func write(int, []byte) (int, syscall.Errno) { return 0, syscall.EAGAIN }
func waitReadable(int, time.Duration) bool   { return false }
