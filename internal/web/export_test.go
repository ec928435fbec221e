package web

// The page caps, for the black-box tests of big systems.
const (
	MaxWorkerRows  = maxWorkerRows
	MaxGroupRows   = maxGroupRows
	MaxTaskRows    = maxTaskRows
	MaxChartGroups = maxChartGroups
)
