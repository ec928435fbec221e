package model

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with one field of what a user wrote: a job
// spec, a configuration block, an API request body. Every validator (spec,
// scenario, control, the engine's admission and placement settings) returns
// it, alone or in FieldErrors, so that the path travels as data from where
// the problem is found to where it is shown (the API's "field", a CLI line)
// instead of being formatted into a string and parsed back. It lives in
// model because the engine, which cannot import spec, produces it too.
type FieldError struct {
	// Path is the field's path from the root of the input, e.g.
	// "jobs[2].tasks[0].count"; empty when the problem is the whole input.
	Path string `json:"field"`
	// Line is the 1-based line in the document, 0 when unknown.
	Line int `json:"line,omitempty"`
	// Msg says what is wrong, for people.
	Msg string `json:"message"`
	// Err is the cause, when the problem was found by a call that has its
	// own error (a sentinel such as admit.ErrUnknownEndpoint); errors.Is
	// and errors.As reach it. It is not part of the API's answer.
	Err error `json:"-"`
}

// Invalid returns a field error at path with a formatted message: the
// constructor validators use.
func Invalid(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Error formats the problem as "line N: path: message", each part present
// when known.
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

// Unwrap returns the cause, or nil.
func (e *FieldError) Unwrap() error { return e.Err }

// Under returns a copy of e with its path rooted under prefix.
func (e *FieldError) Under(prefix string) *FieldError {
	c := *e
	c.Path = JoinPath(prefix, e.Path)
	return &c
}

// FieldErrors is a list of field errors: an input is reported with all its
// problems at once, so that a user fixes them in one pass.
type FieldErrors []*FieldError

// Error formats one problem a line.
func (es FieldErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Err returns es as an error, or nil when it is empty, so that a validator
// collecting problems can end with "return list.Err()".
func (es FieldErrors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// FieldErrorsOf turns err into field errors rooted under prefix: a
// FieldError or FieldErrors keeps its paths (joined under prefix); an
// errors.Join of them is flattened; any other error becomes one field error
// at prefix, its whole text the message and err its cause. The text of an
// error is never parsed for a path: a validator that knows the field
// returns a FieldError.
func FieldErrorsOf(prefix string, err error) FieldErrors {
	if err == nil {
		return nil
	}
	if list, ok := err.(FieldErrors); ok {
		out := make(FieldErrors, len(list))
		for i, e := range list {
			out[i] = e.Under(prefix)
		}
		return out
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out FieldErrors
		for _, e := range j.Unwrap() {
			out = append(out, FieldErrorsOf(prefix, e)...)
		}
		return out
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return FieldErrors{fe.Under(prefix)}
	}
	return FieldErrors{{Path: prefix, Msg: err.Error(), Err: err}}
}

// FieldErrorOf is FieldErrorsOf for an error that names one field: the
// first of them (an empty path under prefix when there is none).
func FieldErrorOf(prefix string, err error) *FieldError {
	if list := FieldErrorsOf(prefix, err); len(list) > 0 {
		return list[0]
	}
	return &FieldError{Path: prefix}
}

// JoinPath joins two field paths: "a" and "b" make "a.b", "a" and "[2].b"
// make "a[2].b"; an empty side is left out.
func JoinPath(prefix, path string) string {
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
