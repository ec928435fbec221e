package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxDocumentBytes bounds a document so a runaway file cannot exhaust memory.
const MaxDocumentBytes = 64 << 20

// Decode reads a YAML or JSON document into out, rejecting unknown fields,
// wrong types, and numbers out does not hold as written (a fraction or an
// overflow in an integer field, NaN or an infinity in a number field), each
// named by its exact field path. It returns the document's node tree so
// that later checks can report lines. JSON is YAML, and reads as the
// parser reads it; plain JSON, the common submission, gets the parser's
// tree without the parser (jsonnode.go).
func Decode(data []byte, out any) (*yaml.Node, error) {
	if len(data) > MaxDocumentBytes {
		return nil, &FieldError{Msg: fmt.Sprintf("document is %d bytes, more than the limit of %d", len(data), MaxDocumentBytes)}
	}
	var root yaml.Node
	if n, ok := jsonNode(data); ok {
		root = *n // the tree the parser would build, without it (jsonnode.go)
	} else if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(err)
	}
	if root.Kind == 0 {
		return nil, &FieldError{Msg: "document is empty"}
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
	problems, complete := checkShapeOf(&root, out, "yaml")
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
