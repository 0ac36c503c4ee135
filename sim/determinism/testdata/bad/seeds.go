package bad

import (
	"math/rand/v2"
	"os"
	"time"
)

// Seeds that differ per process or per run.
func Seeds() (*rand.Rand, *rand.Rand) {
	a := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))           // want "os.Getpid"
	b := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2)) // want "time.Now"
	return a, b
}
