package bad

import . "time"

// A dot import hides the package name, not the call.
func DotTime() Time {
	Sleep(Millisecond) // want "time.Sleep"
	return Now()       // want "time.Now"
}
