//go:build linux

package uring

import (
	"bytes"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// tb is what the helpers need of a *testing.T and a *rapid.T.
type tb interface {
	Fatal(...any)
	Skipf(string, ...any)
}

func newRing(t tb) *Ring {
	r, err := New(64, SetupSingleIssuer|SetupDeferTaskrun|SetupSubmitAll)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	if err := r.RegisterRingFD(); err != nil {
		t.Fatal(err)
	}
	return r
}

func socketPair(t tb) [2]int {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fds
}

// A stream of messages sent through the ring comes out of a multishot receive into a buffer
// ring much smaller than the stream, whole and in order, the buffers given back once read, in
// another order than the kernel took them.
func TestRecvMultishotStream(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := newRing(rt)
		defer r.Close()
		bufs, err := r.RegisterBufRing(1, 4, 64)
		if err != nil {
			rt.Fatal(err)
		}
		fds := socketPair(rt)
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		hold := rapid.IntRange(1, 3).Draw(rt, "hold") // buffers read before any goes back
		var held []uint16
		msgs := rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 1, 200), 1, 20).Draw(rt, "msgs")
		src, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			rt.Fatal(err)
		}
		defer unix.Munmap(src)
		var want []byte
		for _, m := range msgs {
			want = append(want, m...)
		}
		copy(src, want)

		recv := func() {
			s := r.SQE()
			s.Opcode, s.FD, s.Ioprio, s.Flags, s.BufIndex = OpRecv, int32(fds[1]), RecvMultishot, SqeBufferSelect, bufs.Group
			s.UserData = 1
		}
		recv()
		var got []byte
		sent, off := 0, 0
		for turns := 0; len(got) < len(want); turns++ {
			if turns > 10000 {
				rt.Fatalf("stuck after %d of %d bytes", len(got), len(want))
			}
			if sent < len(msgs) && r.Ready() == 0 {
				m := msgs[sent]
				s := r.SQE()
				s.Opcode, s.FD, s.Addr, s.Len = OpSend, int32(fds[0]), addrOf(src[off:]), uint32(len(m))
				s.UserData = 2
				sent++
				off += len(m)
			}
			bufs.Publish()
			if err := r.SubmitAndWait(1); err != nil {
				rt.Fatal(err)
			}
			r.Completions(func(c *CQE) {
				switch c.UserData {
				case 2:
					if c.Res < 0 {
						rt.Fatalf("send: %v", unix.Errno(-c.Res))
					}
				case 1:
					if c.Res > 0 {
						if c.Flags&CQEFBuffer == 0 {
							rt.Fatal("a receive without its buffer")
						}
						bid := uint16(c.Flags >> 16)
						got = append(got, bufs.Buf(bid, int(c.Res))...)
						held = append(held, bid)
					} else if c.Res != -int32(unix.ENOBUFS) {
						rt.Fatalf("receive: %d", c.Res)
					}
					if len(held) >= hold || c.Res < 0 {
						for i := len(held) - 1; i >= 0; i-- { // last read, first back
							bufs.Put(held[i])
						}
						held = held[:0]
					}
					if c.Flags&CQEFMore == 0 {
						recv()
					}
				}
			})
		}
		if !bytes.Equal(got, want) {
			rt.Fatalf("received %q, sent %q", got, want)
		}
	})
}

// A multishot receive cancelled by its user data ends (a last completion without CQEFMore),
// and the socket's bytes stay in it for whoever reads next.
func TestCancelRecv(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newRing(t)
	defer r.Close()
	bufs, err := r.RegisterBufRing(1, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	fds := socketPair(t)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	s := r.SQE()
	s.Opcode, s.FD, s.Ioprio, s.Flags, s.BufIndex = OpRecv, int32(fds[1]), RecvMultishot, SqeBufferSelect, bufs.Group
	s.UserData = 7
	if err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	s = r.SQE()
	s.Opcode, s.Addr, s.UserData = OpAsyncCancel, 7, 8
	ended, cancelled := false, false
	for !ended || !cancelled {
		if err := r.SubmitAndWait(1); err != nil {
			t.Fatal(err)
		}
		r.Completions(func(c *CQE) {
			switch c.UserData {
			case 7:
				if c.Flags&CQEFMore == 0 {
					ended = true
				}
				if c.Res > 0 {
					t.Fatalf("received %d bytes nobody sent", c.Res)
				}
			case 8:
				if c.Res != 0 {
					t.Fatalf("cancel: %v", unix.Errno(-c.Res))
				}
				cancelled = true
			}
		})
	}
	if _, err := unix.Write(fds[0], []byte("after")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	n, err := unix.Read(fds[1], b)
	if err != nil || string(b[:n]) != "after" {
		t.Fatalf("read %q, %v after the cancel", b[:n], err)
	}
}
