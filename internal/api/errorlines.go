package api

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/allot-sched/allot/internal/model"
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

// MapLines gives each line e names the line lineOf returns for its field,
// 0 for none: for an answer to a document the client wrote from the
// user's (a re-encoded one), whose lines are not the user's. The message
// is written again from the details, or with its line prefix replaced.
func (e *Error) MapLines(lineOf func(field string) int) {
	for _, d := range e.Details {
		d.Line = lineOf(d.Path)
	}
	hadLine := e.Line > 0 || linePrefix.MatchString(e.Message)
	e.Line = lineOf(e.Field)
	switch {
	case len(e.Details) > 0:
		e.Message = model.FieldErrors(e.Details).Error()
	case hadLine:
		msg := linePrefix.ReplaceAllString(e.Message, "")
		if e.Line > 0 {
			msg = fmt.Sprintf("line %d: %s", e.Line, msg)
		}
		e.Message = msg
	}
}
