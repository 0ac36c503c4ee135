package bad

import (
	"sync"
	"time"
)

// Blocking on goroutines the simulator does not schedule, and the machine's time zone.
func Blocking(wg *sync.WaitGroup, c *sync.Cond, t time.Time) {
	wg.Go(func() {})                         // want "sync.WaitGroup.Go"
	wg.Wait()                                // want "sync.WaitGroup.Wait"
	c.Wait()                                 // want "sync.Cond.Wait"
	_ = t.Local()                            // want "time.Time.Local"
	_ = time.Local                           // want "time.Local"
	_, _ = time.LoadLocation("Europe/Paris") // want "time.LoadLocation"
}
