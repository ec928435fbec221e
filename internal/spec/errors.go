// Package spec reads what users write: the server and scenario configuration
// blocks (queues, policies, placement) and job specifications, in YAML or
// JSON. Every error names the field path and, when the input is a document,
// its line; nothing half-read is returned.
package spec

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with one field of the input.
type FieldError struct {
	// Path is the field's path, e.g. "jobs[2].tasks[0].count".
	Path string `json:"field"`
	// Line is the 1-based line in the document, 0 when unknown.
	Line int    `json:"line,omitempty"`
	Msg  string `json:"message"`
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is a list of field errors; a document is reported with all its
// problems at once so a user fixes them in one pass.
type Errors []*FieldError

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// errs collects field errors while a document is checked.
type errs struct {
	list Errors
}

func (c *errs) add(path, format string, args ...any) {
	c.list = append(c.list, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// addErr records err under prefix (see FieldErrorOf).
func (c *errs) addErr(prefix string, err error) {
	c.list = append(c.list, FieldErrorOf(prefix, err))
}

// FieldErrorOf turns err into a field error under prefix. An error that
// already names a field path, as policy validation does
// ("classload.classes[1].percent: ..."), keeps it, joined under the prefix.
func FieldErrorOf(prefix string, err error) *FieldError {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Path: join(prefix, fe.Path), Line: fe.Line, Msg: fe.Msg}
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); i > 0 && !strings.Contains(msg[:i], " ") {
		return &FieldError{Path: join(prefix, msg[:i]), Msg: msg[i+2:]}
	}
	return &FieldError{Path: prefix, Msg: msg}
}

func (c *errs) err() error {
	if len(c.list) == 0 {
		return nil
	}
	return c.list
}

func join(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}
