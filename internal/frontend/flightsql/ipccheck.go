package flightsql

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// arrow-go reads a client's IPC message headers (flatbuffers) on trust: it allocates by the
// counts they declare (a schema of 4 billion fields ends the process out of memory, which no
// recover catches) and inflates a compressed buffer to the size it claims. checkIPCHeader
// walks a header as arrow-go will, before arrow-go sees it: every table, vector and string
// must lie inside the header, the fields and metadata entries it holds (shared ones counted
// each time they are reached) are bounded, and compressed bodies are refused.

// ipcTablesMax bounds the tables (fields, types, metadata entries) one header holds.
const ipcTablesMax = 10000

// ipcDepthMax bounds how deeply fields nest.
const ipcDepthMax = 64

var errIPCTooLarge = fmt.Errorf("it holds more than %d fields and metadata entries", ipcTablesMax)

// The header types of an Arrow IPC Message, and the Union member of a Field's type.
const (
	ipcSchema          = 1
	ipcDictionaryBatch = 2
	ipcRecordBatch     = 3
	ipcTypeUnion       = 14
)

// checkIPCHeader checks the flatbuffer Message header of one IPC message.
func checkIPCHeader(header []byte) error {
	w := &fbWalker{b: header, tablesLeft: ipcTablesMax}
	root, err := w.u32(0)
	if err != nil {
		return err
	}
	msg, err := w.table(root)
	if err != nil {
		return err
	}
	if err := w.keyValues(msg, 4); err != nil {
		return err
	}
	kind, err := w.byteField(msg, 1)
	if err != nil {
		return err
	}
	body, ok, err := w.tableField(msg, 2)
	if err != nil || !ok {
		return err
	}
	switch kind {
	case ipcSchema:
		return w.schema(body)
	case ipcDictionaryBatch:
		batch, ok, err := w.tableField(body, 1)
		if err != nil || !ok {
			return err
		}
		return w.recordBatch(batch)
	case ipcRecordBatch:
		return w.recordBatch(body)
	}
	return fmt.Errorf("message type %d is not a schema, dictionary or record batch", kind)
}

// fbWalker reads a flatbuffer with every access bounds-checked.
type fbWalker struct {
	b          []byte
	tablesLeft int
}

// fbTable is a table's position and its vtable's.
type fbTable struct {
	pos, vtable, vtableLen int
}

var errIPCOutside = errors.New("an offset points outside the message header")

func (w *fbWalker) u32(at int) (int, error) {
	if at < 0 || at > len(w.b)-4 {
		return 0, errIPCOutside
	}
	return int(binary.LittleEndian.Uint32(w.b[at:])), nil
}

func (w *fbWalker) u16(at int) (int, error) {
	if at < 0 || at > len(w.b)-2 {
		return 0, errIPCOutside
	}
	return int(binary.LittleEndian.Uint16(w.b[at:])), nil
}

// table checks the table at pos: its vtable and every field it lists lie inside the buffer.
func (w *fbWalker) table(pos int) (fbTable, error) {
	if w.tablesLeft--; w.tablesLeft < 0 {
		return fbTable{}, errIPCTooLarge
	}
	soffset, err := w.u32(pos)
	if err != nil {
		return fbTable{}, err
	}
	t := fbTable{pos: pos, vtable: pos - int(int32(soffset))}
	if t.vtableLen, err = w.u16(t.vtable); err != nil {
		return fbTable{}, err
	}
	size, err := w.u16(t.vtable + 2)
	if err != nil || t.vtableLen < 4 || t.vtableLen%2 != 0 || t.vtable+t.vtableLen > len(w.b) || pos+size > len(w.b) {
		return fbTable{}, errIPCOutside
	}
	for at := t.vtable + 4; at < t.vtable+t.vtableLen; at += 2 {
		if o, _ := w.u16(at); o >= size && o != 0 {
			return fbTable{}, errIPCOutside
		}
	}
	return t, nil
}

// field is the position of slot's value in t; 0 when absent.
func (w *fbWalker) field(t fbTable, slot int) int {
	at := 4 + 2*slot
	if at >= t.vtableLen {
		return 0
	}
	o, _ := w.u16(t.vtable + at)
	if o == 0 {
		return 0
	}
	return t.pos + o
}

func (w *fbWalker) byteField(t fbTable, slot int) (int, error) {
	at := w.field(t, slot)
	if at == 0 {
		return 0, nil
	}
	if at >= len(w.b) {
		return 0, errIPCOutside
	}
	return int(w.b[at]), nil
}

// ref follows the offset in slot; ok false when absent.
func (w *fbWalker) ref(t fbTable, slot int) (int, bool, error) {
	at := w.field(t, slot)
	if at == 0 {
		return 0, false, nil
	}
	off, err := w.u32(at)
	return at + off, err == nil, err
}

func (w *fbWalker) tableField(t fbTable, slot int) (fbTable, bool, error) {
	pos, ok, err := w.ref(t, slot)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	tbl, err := w.table(pos)
	return tbl, err == nil, err
}

// vector checks the vector in slot (elemSize bytes each) and returns its start and length.
func (w *fbWalker) vector(t fbTable, slot, elemSize int) (start, n int, err error) {
	pos, ok, err := w.ref(t, slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	if n, err = w.u32(pos); err != nil {
		return 0, 0, err
	}
	start = pos + 4
	if n > (len(w.b)-start)/elemSize {
		return 0, 0, errIPCOutside
	}
	return start, n, nil
}

// tables checks each table of the vector of tables in slot.
func (w *fbWalker) tables(t fbTable, slot int, each func(fbTable) error) error {
	start, n, err := w.vector(t, slot, 4)
	for i := 0; err == nil && i < n; i++ {
		var off int
		off, _ = w.u32(start + 4*i)
		var tbl fbTable
		if tbl, err = w.table(start + 4*i + off); err == nil {
			err = each(tbl)
		}
	}
	return err
}

// keyValues checks a custom_metadata vector of KeyValue tables (key, value strings).
func (w *fbWalker) keyValues(t fbTable, slot int) error {
	return w.tables(t, slot, func(kv fbTable) error {
		if _, _, err := w.vector(kv, 0, 1); err != nil {
			return err
		}
		_, _, err := w.vector(kv, 1, 1)
		return err
	})
}

// schema checks a Schema: fields, custom_metadata, features.
func (w *fbWalker) schema(s fbTable) error {
	if err := w.tables(s, 1, func(f fbTable) error { return w.arrowField(f, 1) }); err != nil {
		return err
	}
	if err := w.keyValues(s, 2); err != nil {
		return err
	}
	_, _, err := w.vector(s, 3, 8)
	return err
}

// arrowField checks a Field: name, type (a Union's type ids), dictionary encoding, children,
// custom_metadata.
func (w *fbWalker) arrowField(f fbTable, depth int) error {
	if depth > ipcDepthMax {
		return fmt.Errorf("its fields nest deeper than %d", ipcDepthMax)
	}
	if _, _, err := w.vector(f, 0, 1); err != nil {
		return err
	}
	kind, err := w.byteField(f, 2)
	if err != nil {
		return err
	}
	typ, ok, err := w.tableField(f, 3)
	if err != nil {
		return err
	}
	if ok && kind == ipcTypeUnion {
		if _, _, err := w.vector(typ, 1, 4); err != nil {
			return err
		}
	}
	if dict, ok, err := w.tableField(f, 4); err != nil {
		return err
	} else if ok {
		if _, _, err := w.tableField(dict, 1); err != nil { // the index type
			return err
		}
	}
	if err := w.tables(f, 5, func(c fbTable) error { return w.arrowField(c, depth+1) }); err != nil {
		return err
	}
	return w.keyValues(f, 6)
}

// recordBatch checks a RecordBatch: nodes and buffers (16-byte structs), no compression,
// variadic buffer counts.
func (w *fbWalker) recordBatch(r fbTable) error {
	for _, slot := range []int{1, 2} {
		if _, _, err := w.vector(r, slot, 16); err != nil {
			return err
		}
	}
	if w.field(r, 3) != 0 {
		return errors.New("compressed record batches are not accepted")
	}
	_, _, err := w.vector(r, 4, 8)
	return err
}
