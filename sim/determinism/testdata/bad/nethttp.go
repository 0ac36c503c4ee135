package bad

import (
	"fmt"
	"net/http"
	"time"
)

// The real network's defaults and real timers.
func HTTP(c *http.Client, v *int) error {
	_, _ = http.Get("http://cp/x")               // want "http.Get"
	_, _ = http.DefaultClient.Get("http://cp/x") // want "http.DefaultClient"
	_ = &http.Client{Timeout: time.Second}       // want "Timeout"
	c.Timeout = time.Second                      // want "Timeout"
	var plain http.Client
	plain.Timeout = time.Second // want "Timeout"
	_ = plain
	return fmt.Errorf("at %p: %-8p", v, v) // want "%p"
}
