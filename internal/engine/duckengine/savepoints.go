package duckengine

// RefusesRollbackToSavepoint marks the engine as one whose sessions keep savepoints by name
// only (DuckDB cannot undo part of a transaction): a frontend that advertises savepoints to
// its clients (Flight SQL's SqlInfo) does not advertise them for it.
func (e *Engine) RefusesRollbackToSavepoint() {}
