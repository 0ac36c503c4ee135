package bad

import (
	_ "unsafe"

	"github.com/jackc/pgx/v5" // want "not reviewed"
)

//go:linkname nanotime runtime.nanotime // want "go:linkname"
func nanotime() int64

var _ = pgx.ErrNoRows
