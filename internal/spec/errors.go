// Package spec reads what users write: the server and scenario configuration
// blocks (queues, policies, placement) and job specifications, in YAML or
// JSON. Every error names the field path and, when the input is a document,
// its line; nothing half-read is returned.
package spec

import (
	"fmt"

	"github.com/allot-sched/allot/internal/model"
)

// FieldError is one problem with one field of the input: model.FieldError,
// the type every validator returns, spelt where documents are read.
type FieldError = model.FieldError

// Errors is a list of field errors (model.FieldErrors); a document is
// reported with all its problems at once so a user fixes them in one pass.
type Errors = model.FieldErrors

// errs collects field errors while a document is checked.
type errs struct {
	list Errors
}

func (c *errs) add(path, format string, args ...any) {
	c.list = append(c.list, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// FieldErrorOf turns err into a field error under prefix: a field error
// keeps its path, joined under the prefix (model.FieldErrorOf).
func FieldErrorOf(prefix string, err error) *FieldError {
	return model.FieldErrorOf(prefix, err)
}

func (c *errs) err() error {
	return c.list.Err()
}

func join(prefix, path string) string { return model.JoinPath(prefix, path) }
