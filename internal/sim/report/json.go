package report

import (
	"encoding/json"
	"io"

	"github.com/allot-sched/allot/internal/sim"
)

// WriteJSON writes the whole result as indented JSON: every figure of the
// run, for tools that read them (the text summary is for people).
func WriteJSON(w io.Writer, r *sim.Result) error {
	return writeIndented(w, r)
}

// WriteDensityJSON writes the task/worker density series as indented JSON.
func WriteDensityJSON(w io.Writer, d *sim.Density) error {
	return writeIndented(w, d)
}

// writeIndented encodes v as JSON indented by two spaces, one value a file.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
