package bad // want "cgo"

// #include <time.h>
import "C"

func Clock() int64 { return int64(C.clock()) }
