package duckengine

import (
	"context"
	"database/sql"

	"github.com/queryflux/queryflux/internal/query"
)

// idReservation is InnoDB's AUTO_INCREMENT counter through the rows of one MySQL statement run
// a row at a time (handler::update_auto_increment and ha_innobase::get_auto_increment): the
// statement reserves values at its first generated id, as many as its rows (a SELECT's rows,
// whose count is not known before they run, 1), then, as each reservation runs out, as many
// as it still counts or 2, 4, ...;
// an explicit id past the reservation moves the counter past it; a row that inserts nothing
// gives its id back to the next row (restore_auto_increment). Values reserved and not used are
// lost, as there.
type idReservation struct {
	conn *sql.Conn
	seq  string
	on   bool // the table has an AUTO_INCREMENT column
	c    counter
	high int64 // the counter when the statement ends
	// next is the id the next generated row takes, end the end of its reservation; reserved
	// the end of the last reservation (0 before one).
	next, end, reserved int64
	rows                int64 // the statement's rows; 0 when not known
	left                int64 // rows the reservation still counts (InnoDB's n_autoinc_rows)
	intervals           int   // reservations made
	// dupMoves: an explicit id moves the counter even when its row inserts nothing (InnoDB
	// moves it on a duplicate key for INSERT ... SELECT and REPLACE).
	dupMoves bool
	// the row in flight: the next before it, its id, whether generated, and the counter
	// once it inserts.
	prevNext, id, written int64
	generated             bool
}

// readRowIDs reads u's rows (a SELECT's first) and reserves their AUTO_INCREMENT ids: each
// row's explicit id, whether it generates one, and the statement's reservation (dupMoves as
// newIDReservation's).
func (s *session) readRowIDs(ctx context.Context, client *query.Request, u *rowUpsert, ai aiColumn, hasAI, dupMoves bool) (ids *idReservation, explicit []int64, generate []bool, err error) {
	if err := s.readSource(ctx, client, u); err != nil {
		return nil, nil, nil, err
	}
	explicit, generate, ok := u.ids(ai, hasAI)
	if !ok {
		return nil, nil, nil, errIDNotNumber
	}
	known := int64(len(u.rows))
	if u.selected.text != "" {
		known = 0 // a SELECT's rows are counted only as they run
	}
	ids, err = newIDReservation(ctx, s.conn, ai, hasAI, known, dupMoves)
	return ids, explicit, generate, err
}

// newIDReservation reads the counter of ai (when hasAI) for a statement of rows rows (0: not
// known).
func newIDReservation(ctx context.Context, conn *sql.Conn, ai aiColumn, hasAI bool, rows int64, dupMoves bool) (*idReservation, error) {
	r := &idReservation{conn: conn, seq: ai.seq, on: hasAI, rows: rows, dupMoves: dupMoves}
	if hasAI {
		var err error
		if r.c, err = readCounter(ctx, conn, ai.seq); err != nil {
			return nil, err
		}
	}
	r.high = r.c.value()
	return r, nil
}

// take is the id of the next row: a generated one when generate, else explicit, which may
// move the counter.
func (r *idReservation) take(ctx context.Context, generate bool, explicit int64) (int64, error) {
	r.prevNext, r.id, r.written, r.generated = r.next, explicit, r.high, generate
	if generate {
		if r.next == 0 || r.next >= r.end {
			if r.left == 0 {
				// the statement's rows at first, else 1, 2, 4, ... by the reservations made
				r.left = r.rows
				if r.rows == 0 || r.intervals > 0 {
					r.left = reservation(r.intervals)
				}
			}
			if err := moveTo(ctx, r.conn, r.seq, &r.c, r.high); err != nil {
				return 0, err
			}
			first, err := reserve(ctx, r.conn, r.seq, &r.c, r.left)
			if err != nil {
				return 0, err
			}
			r.intervals++
			r.next, r.end, r.reserved = first, first+r.left, first+r.left
			r.high = max(r.high, r.end)
		}
		r.id = r.next
		r.next++
		r.written = r.high
	} else if r.on {
		if r.next > 0 && explicit >= r.next {
			r.next = explicit + 1
		}
		if explicit >= r.reserved && explicit > 0 {
			r.written = max(r.high, explicit+1)
		}
	}
	if r.left > 0 {
		r.left--
	}
	return r.id, nil
}

// done ends the row take answered for: inserted, or not, when it gives its id back (an
// explicit one's move of the next id too, as write_record's restore_auto_increment does).
func (r *idReservation) done(inserted bool) {
	if inserted || !r.generated && r.dupMoves {
		r.high = r.written
	}
	if !inserted {
		if r.prevNext > 0 || !r.generated {
			r.next = r.prevNext
		} else {
			r.next = r.id
		}
	}
}

// retried counts n more writes of the row in flight (a REPLACE's, after each row it deleted):
// InnoDB counts its reservation down a write at a time.
func (r *idReservation) retried(n int64) {
	r.left = max(0, r.left-n)
}

// finish moves the counter to where the statement leaves it.
func (r *idReservation) finish(ctx context.Context) error {
	if !r.on {
		return nil
	}
	return moveTo(ctx, r.conn, r.seq, &r.c, r.high)
}
