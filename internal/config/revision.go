package config

import "time"

// StoredRevision is one configuration as an editable store (pgconfig) kept it: ID numbers the
// edits, Revision is the worker snapshot revision it was served under, Note says what made it
// ("edit", "import FILE", "rollback to 12").
type StoredRevision struct {
	ID        int64     `json:"id"`
	Revision  string    `json:"revision"`
	Note      string    `json:"note"`
	Clusters  int       `json:"clusters"`
	Groups    int       `json:"groups"`
	Users     int       `json:"users"`
	CreatedAt time.Time `json:"createdAt"`
}
