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

// Rejection is one configuration edit the control plane refused: Source says which request
// (PUT, rollback), Reason what was wrong, as the API answered it (never the document itself).
type Rejection struct {
	ID        int64     `json:"id"`
	Source    string    `json:"source"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"createdAt"`
}
