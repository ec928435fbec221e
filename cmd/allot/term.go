package main

import (
	"io"
	"os"
)

// isTerminal reports whether w is a terminal, where progress is redrawn in
// place; elsewhere (a pipe, a CI log) each change goes on its own line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
