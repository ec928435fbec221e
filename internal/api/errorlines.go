package api

import (
	"fmt"
	"regexp"
	"strconv"
)

// linePrefix is how an error message names its line.
var linePrefix = regexp.MustCompile(`^line (\d+): `)

// ShiftLines moves the lines e names (its line, the line in its message,
// its details' lines) by the given number of lines: from the lines of a
// request's body to those of the file a document came from, or back from
// a body the client edited.
func (e *Error) ShiftLines(by int) {
	if by == 0 {
		return
	}
	if e.Line > 0 {
		e.Line += by
		if m := linePrefix.FindStringSubmatch(e.Message); m != nil {
			n, _ := strconv.Atoi(m[1])
			e.Message = fmt.Sprintf("line %d: %s", n+by, e.Message[len(m[0]):])
		}
	}
	for _, d := range e.Details {
		if d.Line > 0 {
			d.Line += by
		}
	}
}
