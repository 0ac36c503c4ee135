package mysqlwire

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
)

var paddedSelect = frontendtest.PaddedSelect

func driverErrorNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// heldSQLConn is one go-sql-driver connection as frontendtest.CheckHeldBytesBound drives it.
type heldSQLConn struct {
	c     *sql.Conn
	stmts map[string]*sql.Stmt
}

func (h *heldSQLConn) Prepare(key, sql string) error {
	st, err := h.c.PrepareContext(context.Background(), sql)
	if err == nil {
		h.stmts[key] = st
	}
	return err
}

func (h *heldSQLConn) Run(key string) (string, error) {
	var v string
	err := h.stmts[key].QueryRowContext(context.Background()).Scan(&v)
	return v, err
}

func (h *heldSQLConn) Close(key string) error { return h.stmts[key].Close() }

// End closes the connection itself (not returned to the pool).
func (h *heldSQLConn) End() { _ = h.c.Raw(func(any) error { return driver.ErrBadConn }) }

func driverErrorCode(err error) string {
	if n := driverErrorNumber(err); n != 0 {
		return fmt.Sprint(n)
	}
	return ""
}

// TestHeldBytesBound: frontendtest.CheckHeldBytesBound through go-sql-driver: past the session's
// budget a statement is refused as MariaDB refuses one past max_session_mem_used (1290), past
// the daemon's pool with 1041 (out of resources).
func TestHeldBytesBound(t *testing.T) {
	backend, dbName := mariaBackend(t)
	limits := netlimit.Limits{HeldBytesMax: frontendtest.HeldBytesConnectionMax, Held: heldmem.NewPool(frontendtest.HeldBytesDaemonMax)}
	addr := startServer(t, backend, Options{Limits: limits})
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=1048576")
	open := func() frontendtest.HeldConn {
		c, err := d.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return &heldSQLConn{c: c, stmts: map[string]*sql.Stmt{}}
	}
	frontendtest.CheckHeldBytesBound(t, open, frontendtest.HeldCodes{Code: driverErrorCode, Connection: "1290", Daemon: "1041"})
}

// TestHeldBytesBoundLongData: long data counts in the session's budget: with 600 KB of
// statements held under 1 MiB, a 700 KB value streamed with COM_STMT_SEND_LONG_DATA fails its
// execute with 1290, and the session goes on (300 KB of long data after it run).
func TestHeldBytesBoundLongData(t *testing.T) {
	const size = 300 << 10
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{Limits: netlimit.Limits{HeldBytesMax: 1 << 20}})
	// maxAllowedPacket=1 MiB: the driver streams every value of 512 KiB or more as long data.
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=1048576")
	ctx := context.Background()
	a, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 2 {
		st, err := a.PrepareContext(ctx, paddedSelect(i, size))
		if err != nil {
			t.Fatalf("statement %d of 2: %v", i, err)
		}
		defer st.Close()
	}
	long, err := a.PrepareContext(ctx, "select length(?)")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = long.QueryRowContext(ctx, bytes.Repeat([]byte{'v'}, 700<<10)).Scan(&n)
	if driverErrorNumber(err) != 1290 {
		t.Fatalf("700 KB of long data while 600 KB are held: %v, want 1290", err)
	}
	if err := long.QueryRowContext(ctx, bytes.Repeat([]byte{'w'}, 300<<10)).Scan(&n); err != nil || n != 300<<10 {
		t.Fatalf("300 KB of long data after the refusal: %d, %v", n, err)
	}
}

// A large command leaves nothing behind with its session: ten clients each send a 4 MiB
// statement and stay connected, idle; the heap keeps none of the buffers it arrived in.
func TestLargeCommandBufferNotKeptByAnIdleSession(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	addr := startServer(t, unrecorded{eng}, Options{}) // frontendtest.Backend keeps every request
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=16777216")
	ctx := context.Background()
	const conns = 10
	before := heapInUse()
	for range conns {
		c, err := d.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var n int
		if err := c.QueryRowContext(ctx, paddedSelect(1, 4<<20)).Scan(&n); err != nil || n != 1 {
			t.Fatalf("a 4 MiB statement: %d, %v", n, err)
		}
	}
	runtime.GC() // what a buffer pool was given is dropped at the second cycle
	if grew := int64(heapInUse()) - int64(before); grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d idle sessions that each sent one 4 MiB statement", grew, conns)
	}
}

// unrecorded runs requests on its engine and keeps none of them.
type unrecorded struct{ query.Engine }

func (unrecorded) Ready() bool { return true }

// TestHeldBytesBoundCursors: a cursor's result is kept until fetched, so it counts against the
// session's budget: a client (raw COM_STMT_EXECUTE with the cursor flag, no fetch) opening
// cursors of 300 KB rows under 1 MiB is refused with 1290 at the fourth, fetches the rows of
// the first ones after it, and a statement's cursor fetched to its end gives its room back.
func TestHeldBytesBoundCursors(t *testing.T) {
	f := coreServer(t, coreSetup{limits: netlimit.Limits{HeldBytesMax: 1 << 20}})
	noDeprecateEOF := func(c *client.Conn) error { c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF); return nil } // as libmariadb: no cursor otherwise
	c, err := client.Connect(f.addr, testUser, "", f.dbName, noDeprecateEOF)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// command writes one command and reads its answer up to its first EOF (a cursor's execute:
	// after its column definitions; a fetch: after its rows) or its error.
	command := func(p []byte) (last []byte, err error) {
		c.ResetSequence()
		if err := c.WritePacket(append(make([]byte, 4), p...)); err != nil {
			t.Fatal(err)
		}
		for {
			data, err := c.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if data[0] == mysql.ERR_HEADER {
				return data, c.HandleErrorPacket(data)
			}
			if data[0] == mysql.EOF_HEADER && len(data) == 5 {
				return data, nil
			}
		}
	}
	execute := func(id uint32) ([]byte, error) {
		p := binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_EXECUTE}, id)
		return command(binary.LittleEndian.AppendUint32(append(p, cursorTypeReadOnly), 1))
	}
	fetch := func(id uint32) ([]byte, error) {
		p := binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_FETCH}, id)
		return command(binary.LittleEndian.AppendUint32(p, 10))
	}
	var ids []uint32
	for i := range 4 {
		st, err := c.Prepare(fmt.Sprintf("SELECT REPEAT('%c', 300000)", 'a'+i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, st.ID)
	}
	for i, id := range ids[:3] {
		eof, err := execute(id)
		if err != nil || binary.LittleEndian.Uint16(eof[3:])&mysql.SERVER_STATUS_CURSOR_EXISTS == 0 {
			t.Fatalf("cursor %d: %v (EOF % x)", i, err, eof)
		}
	}
	if _, err := execute(ids[3]); driverErrorNumber(err) != 1290 && !strings.Contains(fmt.Sprint(err), "1290") {
		t.Fatalf("a fourth cursor of 300 KB under 1 MiB: %v, want 1290", err)
	}
	// Its one row, fewer than the ten asked: the end read, the cursor closed (as MariaDB).
	if eof, err := fetch(ids[0]); err != nil || binary.LittleEndian.Uint16(eof[3:])&mysql.SERVER_STATUS_LAST_ROW_SEND == 0 {
		t.Fatalf("fetching the first cursor after the refusal: %v (EOF % x)", err, eof)
	}
	if _, err := execute(ids[3]); err != nil {
		t.Fatalf("the fourth cursor after the first was read: %v", err)
	}
}

// Packets held whole count in the daemon's messages in flight while they are: under a pool of 1 MiB a
// 900 KB statement (go-sql-driver) runs and gives its room back, and a 2 MiB one (within
// max_allowed_packet) is refused with 1041.
func TestMessagesInFlightDrawOnTheDaemonsBudget(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	pool := heldmem.NewPool(1 << 20)
	addr := startServer(t, unrecorded{eng}, Options{Limits: netlimit.Limits{InFlight: pool}})
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=16777216")
	var n int
	if err := d.QueryRow(paddedSelect(1, 900<<10)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a 900 KB statement under a 1 MiB pool: %d, %v", n, err)
	}
	if pool.Used() != 0 {
		t.Fatalf("after the statement the pool holds %d bytes", pool.Used())
	}
	// As max_allowed_packet is refused (limits_test.go): at the header, before the body is read;
	// the connection ends.
	_, nc := loggedInRaw(t, addr)
	if _, err := nc.Write([]byte{0, 0, 0x20, 0, mysql.COM_QUERY}); err != nil { // declares 2 MiB, sends 1 byte
		t.Fatal(err)
	}
	wantRefusal(t, nc, 1, mysql.ER_OUT_OF_RESOURCES, "the server holds 0 bytes for its clients and 2097152 more would pass its limit of 1048576; try again later")
	if pool.Used() != 0 {
		t.Fatalf("after the refusal the pool holds %d bytes", pool.Used())
	}
}

// TestPreparePastTheRoomRefusedUnread: a COM_STMT_PREPARE whose statement could not be kept is
// refused from its first packet's header with 1290 and read past, never held whole: under a
// daemon pool of 1 MiB for messages in flight, go-sql-driver's prepares of 2 MiB and of 17 MiB
// (two packets) are refused and the session goes on in step, where holding them whole would
// have ended it (1041).
func TestPreparePastTheRoomRefusedUnread(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	limits := netlimit.Limits{HeldBytesMax: 1 << 20, InFlight: heldmem.NewPool(1 << 20)}
	addr := startServer(t, unrecorded{eng}, Options{Limits: limits})
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=33554432")
	ctx := context.Background()
	c, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, size := range []int{2 << 20, 17 << 20} {
		_, err := c.PrepareContext(ctx, paddedSelect(1, size))
		if driverErrorNumber(err) != 1290 || !strings.Contains(err.Error(), "this connection holds") {
			t.Fatalf("a statement of %d bytes under a 1 MiB budget: %v, want 1290", size, err)
		}
	}
	st, err := c.PrepareContext(ctx, "select 40 + ?")
	if err != nil {
		t.Fatalf("a small statement after the refusals: %v", err)
	}
	defer st.Close()
	var n int
	if err := st.QueryRowContext(ctx, 2).Scan(&n); err != nil || n != 42 {
		t.Fatalf("it ran: %d, %v", n, err)
	}
}

// TestLongDataPastTheRoomRefusedUnread: long data the session could not keep is refused from its
// header and read past, never held whole: under a daemon pool of 512 KiB for messages in flight,
// go-sql-driver's 700 KB value (one COM_STMT_SEND_LONG_DATA) with 600 KB of statements held fails
// its execute with 1290 and the session goes on, where holding the chunk whole would have ended
// it (1041).
func TestLongDataPastTheRoomRefusedUnread(t *testing.T) {
	backend, dbName := mariaBackend(t)
	limits := netlimit.Limits{HeldBytesMax: 1 << 20, InFlight: heldmem.NewPool(512 << 10)}
	addr := startServer(t, backend, Options{Limits: limits})
	// maxAllowedPacket=1 MiB: the driver streams every value of 512 KiB or more as long data.
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=1048576")
	ctx := context.Background()
	a, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 2 {
		st, err := a.PrepareContext(ctx, paddedSelect(i, 300<<10))
		if err != nil {
			t.Fatalf("statement %d of 2: %v", i, err)
		}
		defer st.Close()
	}
	long, err := a.PrepareContext(ctx, "select length(?)")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = long.QueryRowContext(ctx, bytes.Repeat([]byte{'v'}, 700<<10)).Scan(&n)
	if driverErrorNumber(err) != 1290 {
		t.Fatalf("700 KB of long data while 600 KB are held: %v, want 1290", err)
	}
	if err := long.QueryRowContext(ctx, "short").Scan(&n); err != nil || n != 5 {
		t.Fatalf("the statement after the refusal: %d, %v", n, err)
	}
}

// TestCommandCountsInFlightUntilAnswered: a large command counts in the daemon's messages in
// flight until it was answered, not only while it arrives: go-mysql's copy of it lives while it
// runs. Under a pool of 1 MiB, a 600 KB statement waiting on MariaDB for a lock the test holds
// leaves no room for a second client's 600 KB statement (1041 at its header) until it was
// answered.
func TestCommandCountsInFlightUntilAnswered(t *testing.T) {
	eng, dsn, dbName := frontendtest.MariaDB(t)
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	holder, err := direct.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	lock := "qf_in_flight_" + dbName
	if _, err := holder.ExecContext(context.Background(), "SELECT GET_LOCK(?, 0)", lock); err != nil {
		t.Fatal(err)
	}
	pool := heldmem.NewPool(1 << 20)
	addr := startServer(t, unrecorded{eng}, Options{Limits: netlimit.Limits{InFlight: pool}})
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=16777216")
	const size = 600 << 10
	waiting := "SELECT GET_LOCK('" + lock + "', 600) /* " + strings.Repeat("x", size) + " */"
	done := make(chan error, 1)
	go func() {
		var n int
		done <- d.QueryRow(waiting).Scan(&n)
	}()
	// Once MariaDB runs it (it waits for the lock), the statement was read whole and handed on.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := holder.QueryRowContext(context.Background(),
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the statement never reached MariaDB")
		}
	}
	// The second client's header (a raw one: a driver still writing the body when the server
	// closes gets a reset instead of the answer).
	_, nc := loggedInRaw(t, addr)
	if _, err := nc.Write([]byte{0x00, 0x60, 0x09, 0, mysql.COM_QUERY}); err != nil { // declares 600 KB
		t.Fatal(err)
	}
	wantRefusal(t, nc, 1, mysql.ER_OUT_OF_RESOURCES, fmt.Sprintf(
		"the server holds %d bytes for its clients and %d more would pass its limit of %d; try again later", 1+len(waiting), size, 1<<20))
	if _, err := holder.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", lock); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting statement: %v", err)
	}
	var n int
	if err := d.QueryRow(paddedSelect(1, size)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the second statement after the first was answered: %d, %v", n, err)
	}
	if pool.Used() != 0 {
		t.Fatalf("after the statements the pool holds %d bytes", pool.Used())
	}
}
