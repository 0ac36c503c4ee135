package scenarios

// SharedPlans counts the query plans the run's workers share and the shared configurations
// they were compiled from.
func SharedPlans(w *World) (plans, configs int) {
	s := sharedConfigsOf(w)
	return len(s.plans), len(s.derived)
}
