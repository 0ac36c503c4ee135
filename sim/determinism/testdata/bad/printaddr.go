package bad

import (
	"fmt"
	"unsafe"
)

type token struct{ id int }

// Printing a value fmt shows as an address.
func PrintAddr(n *int, ch chan int, f func(), p unsafe.Pointer, tok *token, err error) string {
	_ = fmt.Sprint(n)               // want "as its address"
	_ = fmt.Sprintf("%v %d", ch, 1) // want "as its address"
	_ = fmt.Errorf("%v", f)         // want "as its address"
	fmt.Println(p)                  // want "as its address"
	return fmt.Sprint(tok, err, *n) // fine: a struct pointer prints as &{...}
}
