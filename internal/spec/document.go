package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxDocumentBytes bounds a document so a runaway file cannot exhaust memory.
const MaxDocumentBytes = 64 << 20

// ErrTrailingText is the cause of Decode's error for text after the
// document it reads: a second document, or text that is not part of the
// first. Reading the first alone would take part of what was sent for
// all of it.
var ErrTrailingText = errors.New("text after the document")

// Decode reads a YAML or JSON document into out, rejecting unknown fields,
// wrong types, keys given twice, text after the document, and numbers out
// does not hold as written (a fraction or an overflow in an integer field,
// NaN or an infinity in a number field), each named by its exact field
// path. It returns the document's node tree so that later checks can
// report lines. JSON is YAML, and reads as the parser reads it; plain
// JSON, the common submission, gets the parser's tree without the parser
// (jsonnode.go).
//
// A document's aliases may not expand it past MaxDocumentBytes, nor a
// job (out a *Job) past MaxJobSpecBytes, unless its text is larger: the
// size is added up on the parsed tree before anything is expanded
// (docWalk), so that a small document cannot make the decoder build a
// huge value. A job's mappings hold at most 1,024 keys, checked there too:
// the decoder's time grows with the square of a mapping's keys.
func Decode(data []byte, out any) (*yaml.Node, error) {
	if len(data) > MaxDocumentBytes {
		return nil, &FieldError{Msg: fmt.Sprintf("document is %d bytes, more than the limit of %d", len(data), MaxDocumentBytes)}
	}
	var root yaml.Node
	if n, ok := jsonNode(data); ok {
		root = *n // the tree the parser would build, without it (jsonnode.go)
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		switch err := dec.Decode(&root); {
		case errors.Is(err, io.EOF):
		case err != nil:
			return nil, syntaxError(err)
		default:
			if err := onlyDocument(dec, data); err != nil {
				return nil, err
			}
		}
	}
	if root.Kind == 0 {
		return nil, &FieldError{Msg: "document is empty"}
	}
	bounds := decodeBounds{bytes: MaxDocumentBytes, what: "the document", why: "a document is at most that large"}
	if b, ok := out.(boundedDocument); ok {
		bounds = b.decodeBounds()
	}
	bounds.bytes = max(bounds.bytes, len(data))
	over, twice := walkDocument(&root, bounds)
	if over != nil {
		return nil, Errors{over}
	}
	// The tree just parsed is decoded, not the text parsed again: a
	// submission is parsed once. The strict decoder's unknown fields are
	// the shape checker's to find, with their paths; where it could not
	// look everywhere (aliases that exceed its budget), the text is
	// decoded again by the strict decoder.
	err := root.Decode(out)
	var te *yaml.TypeError
	if err != nil && !errors.As(err, &te) {
		var fe *FieldError
		if !errors.As(err, &fe) {
			return nil, typeErrors(err, &root) // not about one field: aliasing, a bad tag
		}
	}
	// The document's shape, checked against out, finds what the decoder
	// takes silently and names each field exactly (see shapeChecker).
	// Keys given twice, which the decoder names by line only, are
	// docWalk's.
	problems, complete := checkShapeOf(&root, out, "yaml")
	if len(twice) > 0 {
		problems = append(twice, problems...)
		slices.SortStableFunc(problems, func(a, b *FieldError) int { return a.Line - b.Line })
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if !complete {
		if v := reflect.ValueOf(out); v.Kind() == reflect.Pointer && !v.IsNil() {
			v.Elem().SetZero()
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err = dec.Decode(out); errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return nil, typeErrors(err, &root)
	}
	return &root, nil
}

// onlyDocument reads what follows the first document of data from dec:
// nothing, or documents with nothing in them (a final "---"). Anything
// else is an error naming the body, its cause ErrTrailingText. Its lines
// are the document's; its messages name columns, not lines, so that they
// stay true when a stream shifts the lines (ShiftLines).
func onlyDocument(dec *yaml.Decoder, data []byte) error {
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return trailingText(data, err)
		case len(next.Content) == 0:
			continue
		}
		n := next.Content[0]
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "" {
			continue // "---" and nothing after it
		}
		return Errors{{Path: "body", Line: n.Line, Err: ErrTrailingText,
			Msg: "a second document starts on this line; only one document is read"}}
	}
}

// trailingText is the error for text after the first document that the
// parser could not read: JSON followed by more (a second object, stray
// brackets) is named by where it starts, anything else by the parser's
// message.
func trailingText(data []byte, err error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first json.RawMessage
	at := 0
	if dec.Decode(&first) == nil {
		at = int(dec.InputOffset())
		for at < len(data) && strings.IndexByte(" \t\r\n", data[at]) >= 0 {
			at++
		}
	}
	if at == 0 || at == len(data) { // not JSON, or nothing after it that JSON sees
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		if msg == "did not find expected <document start>" {
			line++ // the parser counts lines from 0, and leaves out a 0
		}
		return Errors{{Path: "body", Line: line, Err: ErrTrailingText, Msg: "text after the document: " + msg}}
	}
	line := 1 + bytes.Count(data[:at], []byte("\n"))
	col := at - (bytes.LastIndexByte(data[:at], '\n') + 1) + 1
	if c := data[at]; c == '{' || c == '[' {
		return Errors{{Path: "body", Line: line, Err: ErrTrailingText,
			Msg: fmt.Sprintf("a second document starts on this line, at column %d; only one document is read", col)}}
	}
	return Errors{{Path: "body", Line: line, Err: ErrTrailingText,
		Msg: fmt.Sprintf("text after the document, at column %d of this line: %.20q", col, data[at:])}}
}

var (
	lineRE    = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	typeRE    = regexp.MustCompile("^cannot unmarshal !!(\\w+) `?(.*?)`? into (\\S+)$")
)

func syntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Errors{{Line: n, Msg: "syntax error: " + m[2]}}
	}
	return Errors{{Msg: "syntax error: " + msg}}
}

// typeErrors turns the decoder's messages into field errors with paths.
func typeErrors(err error, root *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		var fe *FieldError
		if errors.As(err, &fe) {
			if fe.Path == "" {
				fe.Path = PathAt(root, fe.Line)
			}
			return Errors{fe}
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return Errors{{Line: n, Path: PathAt(root, n), Msg: m[2]}}
		}
		return Errors{{Msg: msg}}
	}
	var out Errors
	for _, e := range te.Errors {
		msg := e
		line := 0
		if m := lineRE.FindStringSubmatch(e); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		if m := unknownRE.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown field %q", m[1])
		} else if m := typeRE.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("wrong type: got %s %q, want %s", tagName(m[1]), m[2], goTypeName(m[3]))
		}
		out = append(out, &FieldError{Line: line, Path: PathAt(root, line), Msg: msg})
	}
	return out
}

func tagName(t string) string {
	switch t {
	case "str":
		return "string"
	case "int", "float", "bool", "map", "seq":
		return map[string]string{"int": "integer", "float": "number", "bool": "boolean", "map": "mapping", "seq": "list"}[t]
	}
	return t
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	}
	if i := strings.LastIndex(t, "."); i >= 0 {
		t = t[i+1:]
	}
	return "a " + t
}

// PathAt returns the path of the deepest field that starts on line, e.g.
// "jobs[1].tasks[0].count", or "" when no field starts there.
func PathAt(root *yaml.Node, line int) string {
	best := ""
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := join(path, k.Value)
				if k.Line == line {
					best = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Line == line && c.Kind == yaml.ScalarNode {
					best = p
				}
				walk(c, p)
			}
		}
	}
	if root != nil && line > 0 {
		walk(root, "")
	}
	return best
}

// LineOf returns the line where path ("jobs[1].tasks[0].count") is written,
// or the line of its closest existing parent; 0 when unknown. A top-level
// field the document does not write has no line: the root's own line is
// only where its first field happens to be.
func LineOf(root *yaml.Node, path string) int {
	if root == nil {
		return 0
	}
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	if path == "" {
		line = n.Line
	}
	for _, step := range splitPath(path) {
		switch {
		case step.index >= 0 && n.Kind == yaml.SequenceNode && step.index < len(n.Content):
			n = n.Content[step.index]
			line = n.Line
		case step.index < 0 && n.Kind == yaml.MappingNode:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == step.key {
					line = n.Content[i].Line
					n = n.Content[i+1]
					found = true
					break
				}
			}
			if !found {
				return line
			}
		default:
			return line
		}
	}
	return line
}

type pathStep struct {
	key   string
	index int
}

func splitPath(path string) []pathStep {
	var out []pathStep
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				out = append(out, pathStep{key: part, index: -1})
				break
			}
			if i > 0 {
				out = append(out, pathStep{key: part[:i], index: -1})
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				break
			}
			n, err := strconv.Atoi(part[i+1 : i+j])
			if err == nil {
				out = append(out, pathStep{index: n})
			}
			part = part[i+j+1:]
		}
	}
	return out
}

// WithLines fills in the line of each error from its path.
func WithLines(err error, root *yaml.Node) error {
	var list Errors
	if !errors.As(err, &list) {
		return err
	}
	for _, e := range list {
		if e.Line == 0 {
			e.Line = LineOf(root, e.Path)
		}
	}
	return list
}
