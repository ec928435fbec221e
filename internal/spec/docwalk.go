package spec

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// nodeOverhead is what each node adds to a document's expanded size
// beyond its text: a bracket, a colon or a comma. It is less than JSON
// spends on any node, so that the expanded size of a document is at most
// what the document takes normalised to JSON.
const nodeOverhead = 1

// maxTwice is the most keys given twice docWalk reports: each is named by
// a search of the tree.
const maxTwice = 10

// maxSmallMapping is the largest mapping whose keys docWalk compares pair
// by pair; a larger one gets a set.
const maxSmallMapping = 16

// decodeBounds are the bounds docWalk holds a document to.
type decodeBounds struct {
	// bytes bounds the document's size once its aliases are expanded;
	// what names the document and why says why, for the error.
	bytes     int
	what, why string
	// keys bounds the keys of one mapping; 0 for no bound.
	keys int
}

// boundedDocument is a type whose documents are held to bounds tighter
// than a document's (MaxDocumentBytes): a job, which is stored.
type boundedDocument interface {
	decodeBounds() decodeBounds
}

// maxJobMappingKeys bounds the keys of one mapping of a job, four times
// what its largest (env, MaxEnv) may hold. The decoder compares a
// mapping's keys pair by pair, so that its time grows with the square of
// their number: 30,000 keys took 10 s.
const maxJobMappingKeys = 4 * MaxEnv

func (*Job) decodeBounds() decodeBounds {
	return decodeBounds{bytes: MaxJobSpecBytes, what: "the job", keys: maxJobMappingKeys,
		why: "a job is stored normalised to JSON, in at most 1 MiB; describe identical tasks with count, and pass large data as inputs"}
}

// docWalk reads a parsed document once, before it is decoded, for what
// the decoder would find too late or name wrongly:
//
//   - An alias repeats a node without repeating its text, so a small
//     document may expand to gigabytes: 5,000 aliases of a 65 KB mapping
//     make 325 MB of job, which the decoder built and JSON encoded before
//     the job's size was checked. docWalk adds up the expanded size
//     (scalars' lengths and nodeOverhead a node; an alias counts the size
//     of its anchor's node, measured once when the walk passed it) and
//     stops as soon as it passes the bound. It visits each node of the
//     text once, whatever the aliases.
//   - The decoder compares the keys of a mapping pair by pair; docWalk
//     refuses a mapping of more keys than the bounds allow first.
//   - The decoder names a key given twice by its line only, and a line
//     of one-line JSON holds every field. docWalk names it by its path.
type docWalk struct {
	decodeBounds
	total int
	// sizes holds the expanded size of each anchored node walked, -1
	// while it is being walked (an alias inside its own anchor, which the
	// decoder refuses). It is made at the first anchor.
	sizes map[*yaml.Node]int
	root  *yaml.Node // for the path of a node in an error (pathTo)
	over  *FieldError
	given Errors
}

// walkDocument walks root: it returns the error of a document past its
// bounds, or the keys given twice.
func walkDocument(root *yaml.Node, b decodeBounds) (over *FieldError, twice Errors) {
	w := docWalk{decodeBounds: b, root: root}
	w.node(root)
	return w.over, w.given
}

// node walks n; it returns false once the bound is passed.
func (w *docWalk) node(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		size, walked := w.sizes[n.Alias]
		switch {
		case !walked && n.Alias != nil:
			// An alias follows its anchor in the text, so the walk has
			// measured it; a tree built otherwise is measured here.
			start := w.total
			if !w.node(n.Alias) {
				return false
			}
			size = w.total - start
			w.total = start
		case size < 0:
			size = 0 // inside its own anchor: the decoder refuses it
		}
		return w.add(n, nodeOverhead+size)
	}
	start := w.total
	if n.Anchor != "" {
		if w.sizes == nil {
			w.sizes = map[*yaml.Node]int{}
		}
		w.sizes[n] = -1
	}
	if !w.add(n, nodeOverhead+len(n.Value)) {
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		if w.keys > 0 && len(n.Content)/2 > w.keys {
			where := pathTo(w.root, n)
			if where == "" {
				where = "body"
			}
			w.over = &FieldError{Path: where, Line: n.Line, Msg: fmt.Sprintf("has %d keys, more than any mapping of %s holds (%d)", len(n.Content)/2, w.what, w.keys)}
			return false
		}
		w.twice(n)
		for _, c := range n.Content {
			if !w.node(c) {
				return false
			}
		}
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if !w.node(c) {
				return false
			}
		}
	}
	if n.Anchor != "" {
		w.sizes[n] = w.total - start
	}
	return true
}

// add counts size bytes of n; false when the total passes the bound.
func (w *docWalk) add(n *yaml.Node, size int) bool {
	w.total += size
	if w.total <= w.bytes {
		return true
	}
	where := pathTo(w.root, n)
	if where == "" {
		where = "the top"
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		where += fmt.Sprintf(", an alias of &%s from line %d", n.Value, n.Alias.Line)
	}
	w.over = &FieldError{Path: "body", Line: n.Line, Msg: fmt.Sprintf(
		"%s passes %d bytes once its aliases are expanded (at %s): %s",
		w.what, w.bytes, where, w.why)}
	return false
}

// twice finds the keys of mapping n given twice, as the decoder compares
// them: the same kind and the same text.
func (w *docWalk) twice(n *yaml.Node) {
	c := n.Content
	if len(c) <= 2*maxSmallMapping {
		for i := 2; i+1 < len(c); i += 2 {
			for j := 0; j < i; j += 2 {
				if c[j].Kind == c[i].Kind && c[j].Value == c[i].Value {
					w.givenTwice(n, c[j], c[i])
					break
				}
			}
		}
		return
	}
	type key struct {
		kind  yaml.Kind
		value string
	}
	first := make(map[key]*yaml.Node, len(c)/2)
	for i := 0; i+1 < len(c); i += 2 {
		k := key{c[i].Kind, c[i].Value}
		if prev, ok := first[k]; ok {
			w.givenTwice(n, prev, c[i])
			continue
		}
		first[k] = c[i]
	}
}

// givenTwice reports a key of mapping m given twice.
func (w *docWalk) givenTwice(m, first, again *yaml.Node) {
	if len(w.given) == maxTwice {
		return
	}
	w.given = append(w.given, &FieldError{Path: join(pathTo(w.root, m), again.Value), Line: again.Line,
		Msg: fmt.Sprintf("a key given twice: %q is also at line %d, column %d", again.Value, first.Line, first.Column)})
}

// pathTo returns the path of node target in the tree of root, not
// through aliases: "tasks[3].env". It is for errors, and searches.
func pathTo(root, target *yaml.Node) string {
	var steps []string
	var find func(n *yaml.Node) bool
	find = func(n *yaml.Node) bool {
		if n == target {
			return true
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if find(c) {
					return true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if find(n.Content[i]) || find(n.Content[i+1]) {
					steps = append(steps, n.Content[i].Value)
					return true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if find(c) {
					steps = append(steps, fmt.Sprintf("[%d]", i))
					return true
				}
			}
		}
		return false
	}
	find(root)
	path := ""
	for i := len(steps) - 1; i >= 0; i-- {
		path = join(path, steps[i])
	}
	return path
}
