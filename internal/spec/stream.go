package spec

import (
	"bytes"
	"errors"
	"fmt"
)

// StreamDocument is one document of a stream of job specs: its text and
// the line of the stream it starts on (from 1).
type StreamDocument struct {
	Body []byte
	Line int
}

// SplitYAMLStream splits a YAML stream into its documents: a line that
// starts with "---" (alone or followed by a space) begins a document, one
// that is "..." ends one. Documents with nothing but blank lines and
// comments are left out. The lines of each document keep their place, so
// ShiftLines turns a document's error lines into the stream's. More than
// max documents is an error naming the body.
func SplitYAMLStream(data []byte, max int) ([]StreamDocument, error) {
	var out []StreamDocument
	var cur []byte
	start, content := 1, false
	end := func(next int) error {
		if content {
			if len(out) == max {
				return tooManyDocuments(max)
			}
			out = append(out, StreamDocument{Body: cur, Line: start})
		}
		cur, start, content = nil, next, false
		return nil
	}
	for n, line := range lines(data) {
		text := bytes.TrimRight(line, "\r\n")
		switch {
		case isDocumentStart(text):
			if err := end(n + 1); err != nil {
				return nil, err
			}
			// The marker becomes blanks, so that what follows it on its
			// line keeps its column.
			line = append(bytes.Repeat([]byte(" "), 3), line[3:]...)
		case bytes.Equal(bytes.TrimRight(text, " \t"), []byte("...")):
			if err := end(n + 2); err != nil {
				return nil, err
			}
			continue
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			content = true
		}
		cur = append(cur, line...)
	}
	if err := end(0); err != nil {
		return nil, err
	}
	return out, nil
}

// SplitNDJSON splits newline-delimited JSON into its documents, one a
// line; blank lines are left out. More than max documents is an error
// naming the body.
func SplitNDJSON(data []byte, max int) ([]StreamDocument, error) {
	var out []StreamDocument
	for n, line := range lines(data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(out) == max {
			return nil, tooManyDocuments(max)
		}
		out = append(out, StreamDocument{Body: line, Line: n + 1})
	}
	return out, nil
}

func tooManyDocuments(max int) error {
	return Errors{{Path: "body", Msg: fmt.Sprintf("more than %d job documents; send at most %d in one call", max, max)}}
}

// isDocumentStart reports whether a line begins a YAML document.
func isDocumentStart(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// lines returns data's lines, each with its line end.
func lines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

// ShiftLines moves the lines err names by the given number of lines: a
// document's lines become the lines of the stream it came from.
func ShiftLines(err error, by int) error {
	var list Errors
	var one *FieldError
	switch {
	case by == 0:
	case errors.As(err, &list):
		for _, e := range list {
			if e.Line > 0 {
				e.Line += by
			}
		}
	case errors.As(err, &one) && one.Line > 0:
		one.Line += by
	}
	return err
}
