package priority

// ServiceOrder implements policy.Ranker: urgent jobs in creation order,
// then the others as the last Allocate served them (by least usage per unit
// of weight, or by creation for the time algorithm; by level first with
// serial priority). Suspended jobs are left out.
func (p *Priority) ServiceOrder() ([]string, string) { return p.last.Order() }

// Config returns the policy's configuration with defaults, so that an
// explanation can check what a priority change would do.
func (p *Priority) Config() Config { return p.cfg }

func (p *Priority) rankPhrase() string {
	by := "least usage per unit of weight, then creation"
	if p.cfg.Algorithm == AlgorithmTime {
		by = "creation order (time algorithm)"
	}
	if p.cfg.SerialPriority {
		by = "higher priority level first, then " + by
	}
	return "urgent jobs first, then " + by
}
