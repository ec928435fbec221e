package spec

import "go.yaml.in/yaml/v3"

// The common submission is a small JSON object (what the client and most
// scripts send), and the YAML parser, general enough for every document,
// allocated about 14 KiB and spent most of a decode's time on it. jsonNode
// builds the node tree the YAML parser would for the plainest JSON, which
// the rest of Decode then reads as before: the same tree gives the same
// values, the same shape checks and the same error lines. Whatever it does
// not know to give exactly the parser's tree it leaves to the parser: an
// escape in a string, a byte beyond ASCII (the parser counts columns in
// characters), a tab or a carriage return, a top level that is not an
// object, deep nesting, a key of a thousand characters, any text that is
// not JSON. TestJSONNodeIsTheParsersTree
// and FuzzJSONNode compare the two trees.

// maxJSONNodeDepth is the nesting jsonNode builds; deeper documents go to
// the parser, which has limits of its own.
const maxJSONNodeDepth = 64

// maxJSONKeySpan is the longest a key may run, from its opening quote to
// its colon, for jsonNode to read it; the parser's limit is 1,024.
const maxJSONKeySpan = 1000

// jsonNode returns the YAML parser's document node for data, or false when
// data is not JSON of the plain kind described above.
func jsonNode(data []byte) (*yaml.Node, bool) {
	s := jsonScanner{data: data}
	s.space()
	if s.pos >= len(data) || data[s.pos] != '{' {
		return nil, false
	}
	line, col := s.mark()
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: line, Column: col}
	v, ok := s.value(0)
	if !ok {
		return nil, false
	}
	s.space()
	if s.pos != len(data) {
		return nil, false
	}
	doc.Content = []*yaml.Node{v}
	return doc, true
}

// jsonScanner reads plain JSON, keeping the line and column of the current
// byte as the YAML parser counts them (from 1).
type jsonScanner struct {
	data      []byte
	pos       int
	line      int // newlines before pos
	lineStart int // offset of the current line's first byte
}

func (s *jsonScanner) mark() (line, col int) { return s.line + 1, s.pos - s.lineStart + 1 }

// space skips spaces and newlines; a tab or a carriage return stops it
// (and so the fast path).
func (s *jsonScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ':
		case '\n':
			s.line++
			s.lineStart = s.pos + 1
		default:
			return
		}
		s.pos++
	}
}

func (s *jsonScanner) value(depth int) (*yaml.Node, bool) {
	if s.pos >= len(s.data) || depth > maxJSONNodeDepth {
		return nil, false
	}
	line, col := s.mark()
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(depth, line, col)
	case c == '[':
		return s.array(depth, line, col)
	case c == '"':
		str, ok := s.str()
		if !ok {
			return nil, false
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Tag: "!!str", Value: str, Line: line, Column: col}, true
	default:
		start := s.pos
		if !s.literal() && !s.number() {
			return nil, false
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: string(s.data[start:s.pos]), Line: line, Column: col}
		n.Tag = n.ShortTag() // the parser's resolution of a plain scalar
		return n, true
	}
}

func (s *jsonScanner) object(depth, line, col int) (*yaml.Node, bool) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Tag: "!!map", Line: line, Column: col}
	s.pos++ // {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return n, true
	}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return nil, false
		}
		keyStart := s.pos
		k, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		for s.pos < len(s.data) && s.data[s.pos] == ' ' { // a key's colon is on its line
			s.pos++
		}
		// and near it: the parser takes for a key only what ends in a
		// colon within 1,024 characters of its start.
		if s.pos >= len(s.data) || s.data[s.pos] != ':' || s.pos-keyStart > maxJSONKeySpan {
			return nil, false
		}
		s.pos++
		s.space()
		v, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		n.Content = append(n.Content, k, v)
		end, ok := s.separator('}')
		if !ok {
			return nil, false
		}
		if end {
			return n, true
		}
	}
}

func (s *jsonScanner) array(depth, line, col int) (*yaml.Node, bool) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Tag: "!!seq", Line: line, Column: col}
	s.pos++ // [
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return n, true
	}
	for {
		v, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		n.Content = append(n.Content, v)
		end, ok := s.separator(']')
		if !ok {
			return nil, false
		}
		if end {
			return n, true
		}
	}
}

// str reads a string of printable ASCII without escapes.
func (s *jsonScanner) str() (string, bool) {
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return string(s.data[start:i]), true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
	}
	return "", false
}

// literal reads true, false or null.
func (s *jsonScanner) literal() bool {
	for _, w := range [...]string{"true", "false", "null"} {
		if len(s.data)-s.pos >= len(w) && string(s.data[s.pos:s.pos+len(w)]) == w {
			s.pos += len(w)
			return s.delimited()
		}
	}
	return false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() bool {
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(d, i)
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return false
		}
		i = j
	}
	s.pos = i
	return s.delimited()
}

func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// delimited reports whether a literal or number just read ends where JSON
// lets it: at a space, a newline, a comma, a closing bracket or the end.
func (s *jsonScanner) delimited() bool {
	if s.pos == len(s.data) {
		return true
	}
	switch s.data[s.pos] {
	case ' ', '\n', ',', '}', ']':
		return true
	}
	return false
}

// separator reads what follows a member of an object or array: a comma
// (more follow) or the closing bracket (end). ok is false for anything
// else, or the end of the data.
func (s *jsonScanner) separator(closing byte) (end, ok bool) {
	s.space()
	if s.pos >= len(s.data) {
		return false, false
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		s.space()
		return false, true
	case closing:
		s.pos++
		return true, true
	}
	return false, false
}
