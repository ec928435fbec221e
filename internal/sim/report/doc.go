// Package report renders what the simulator measured (a sim.Result and its
// density series) for people and tools: the text summary with its tables,
// the JSON of every figure, and the SVG charts of running slots per group
// and of task/worker density. It only reads the result, so internal/sim
// stays the discrete-event simulation and its metrics, and a new output
// format is added here without touching the run.
package report
