package pgcapacity

// UseCallerClock makes s read the callers' now instead of the database's clock, so that a test
// can drive time (the model test against the in-memory store).
func (s *Store) UseCallerClock() *Store {
	s.callerClock = true
	return s
}

// FreedNotice is freedNotice, for the test of its bound.
var FreedNotice = freedNotice
