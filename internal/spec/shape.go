package spec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// The decoders take some values silently that they should refuse, and
// report the others by line only:
//
//   - the YAML decoder truncates a number into an integer field (count 2.7
//     becomes 2, priority -1e308 the most negative integer) and takes NaN
//     and the infinities into number fields;
//   - its messages, and those of encoding/json, name a line or a field
//     without list indices, so that in a one-line JSON document every error
//     points at the last field of the line.
//
// shapeChecker walks a document's node tree against the Go type it is
// decoded into, before the decoder runs, and reports both kinds with the
// exact field path. It knows struct fields (by their yaml or json tag),
// maps, lists, numbers, booleans and strings, and asks the types that decode
// themselves (quantities, durations) to read their node. What it does not
// know it leaves to the decoder.
type shapeChecker struct {
	// tag is the struct tag that names fields: "yaml" or "json" (whose
	// names encoding/json matches without regard to case).
	tag string
	// budget bounds the nodes visited: aliases can make a small document
	// a huge tree. The decoder refuses such documents on its own.
	budget int
	errs   Errors
}

// checkShape checks root against the type out points to; tag is "yaml" or
// "json". It returns the problems found, in document order.
func checkShape(root *yaml.Node, out any, tag string) Errors {
	errs, _ := checkShapeOf(root, out, tag)
	return errs
}

// checkShapeOf is checkShape that also reports whether the checker saw the
// whole document: false when it ran out of budget (aliases), or when out is
// not a pointer.
func checkShapeOf(root *yaml.Node, out any, tag string) (errs Errors, complete bool) {
	t := reflect.TypeOf(out)
	if root == nil || t == nil || t.Kind() != reflect.Pointer {
		return nil, false
	}
	c := &shapeChecker{tag: tag, budget: 1_000_000}
	c.value(root, t.Elem(), "", intRange{})
	return c.errs, c.budget >= 0
}

// CheckJSON finds the problems of a JSON document that is to be decoded into
// out, with their field paths (tasks[0].count). encoding/json stops at the
// first error and names fields without list indices, or not at all for an
// error of a type that decodes itself; the API calls CheckJSON when a body
// does not decode, to say exactly where.
func CheckJSON(data []byte, out any) Errors {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil
	}
	return checkShape(&root, out, "json")
}

var (
	nodeType            = reflect.TypeFor[yaml.Node]()
	durationType        = reflect.TypeFor[time.Duration]()
	yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	shaperType          = reflect.TypeFor[shaper]()
	// quantityTypes are the types of a document that read their own text
	// (encoding.TextUnmarshaler): the checker reads a node of theirs the
	// same way, to name the field and line of a bad quantity.
	quantityTypes = map[reflect.Type]bool{
		reflect.TypeFor[CPU](): true, reflect.TypeFor[Memory](): true, reflect.TypeFor[Duration](): true,
	}
)

// shaper is a type that decodes through another type built at run time
// (policy.Config reads each policy's block into the config type its
// package registers): Shape returns a pointer to a value of that type,
// whose shape the checker walks instead.
type shaper interface{ Shape() any }

func (c *shapeChecker) add(n *yaml.Node, path, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Path: path, Line: n.Line, Msg: fmt.Sprintf(format, args...)})
}

// value checks node n, at path, against type t; r is the range of a
// whole-number field, when its struct registers one (fieldRanges).
func (c *shapeChecker) value(n *yaml.Node, t reflect.Type, path string, r intRange) {
	n = c.resolve(n)
	if n == nil || t == nodeType || n.ShortTag() == "!!null" {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(shaperType) {
		t = reflect.TypeOf(reflect.New(t).Interface().(shaper).Shape()).Elem()
	}
	if c.decodesItself(n, t, path) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			c.wrongType(n, path, "a mapping")
			return
		}
		c.fields(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.wrongType(n, path, "a mapping")
			return
		}
		c.pairs(n, func(k, v *yaml.Node) bool {
			c.value(v, t.Elem(), join(path, k.Value), intRange{})
			return true
		})
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			c.wrongType(n, path, "a list")
			return
		}
		for i, item := range n.Content {
			c.value(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), intRange{})
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.integer(n, t, path, r)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		c.integer(n, t, path, r)
	case reflect.Float32, reflect.Float64:
		c.float(n, path)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || !c.isBool(n) {
			c.wrongType(n, path, "true or false")
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			c.wrongType(n, path, "a string")
		} else if c.tag == "json" && n.ShortTag() != "!!str" {
			c.wrongType(n, path, "a string")
		}
	}
}

// resolve follows aliases and enters a document, spending the budget.
func (c *shapeChecker) resolve(n *yaml.Node) *yaml.Node {
	for n != nil {
		if c.budget--; c.budget < 0 {
			return nil
		}
		switch {
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.DocumentNode:
			return nil
		default:
			return n
		}
	}
	return nil
}

// decodesItself checks a type that reads its own node, by letting it read
// it; it reports whether t is such a type.
func (c *shapeChecker) decodesItself(n *yaml.Node, t reflect.Type, path string) bool {
	p := reflect.PointerTo(t)
	var err error
	switch {
	case c.tag == "yaml" && p.Implements(yamlUnmarshalerType):
		err = reflect.New(t).Interface().(yaml.Unmarshaler).UnmarshalYAML(n)
	case c.tag == "json" && p.Implements(jsonUnmarshalerType):
		if n.Kind != yaml.ScalarNode {
			return true // a structured value: encoding/json says what is wrong
		}
		raw := []byte(n.Value)
		if n.ShortTag() == "!!str" {
			raw, _ = json.Marshal(n.Value)
		}
		err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
	case c.tag == "yaml" && quantityTypes[t]:
		// The decoder hands a scalar's text to UnmarshalText; read any
		// node's text, as the decoder would report any other kind by type.
		err = reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value))
	case p.Implements(textUnmarshalerType):
		return true
	case t == durationType && c.tag == "yaml":
		if _, perr := time.ParseDuration(n.Value); n.Kind != yaml.ScalarNode || perr != nil {
			c.wrongType(n, path, "a duration (like 90s, 5m or 1h30m)")
		}
		return true
	default:
		return false
	}
	if err != nil {
		fe := FieldErrorOf("", err)
		c.add(n, join(path, fe.Path), "%s", fe.Msg)
	}
	return true
}

// fields checks a mapping against struct t, inlined structs included.
func (c *shapeChecker) fields(n *yaml.Node, t reflect.Type, path string) {
	fs := c.structFields(t)
	c.pairs(n, func(k, v *yaml.Node) bool {
		f, ok := fs.lookup(k.Value, c.tag == "json")
		switch {
		case ok:
			c.value(v, f.typ, join(path, k.Value), f.rng)
			if f.zero != "" {
				c.refuseZero(v, f, join(path, k.Value))
			}
		case fs.rest != nil:
			c.value(v, fs.rest.Elem(), join(path, k.Value), intRange{})
		default:
			if near := closestName(k.Value, fs.names()); near != "" {
				c.add(k, join(path, k.Value), "unknown field %q; did you mean %q?", k.Value, near)
			} else {
				c.add(k, join(path, k.Value), "unknown field %q", k.Value)
			}
		}
		return true
	})
}

// pairs calls fn for each key and value of mapping n, merge keys (<<)
// expanded as the decoder expands them.
func (c *shapeChecker) pairs(n *yaml.Node, fn func(k, v *yaml.Node) bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			c.merge(v, fn)
			continue
		}
		if !fn(k, v) {
			return
		}
	}
}

func (c *shapeChecker) merge(v *yaml.Node, fn func(k, v *yaml.Node) bool) {
	switch m := c.resolve(v); {
	case m == nil:
	case m.Kind == yaml.MappingNode:
		c.pairs(m, fn)
	case m.Kind == yaml.SequenceNode:
		for _, item := range m.Content {
			if im := c.resolve(item); im != nil && im.Kind == yaml.MappingNode {
				c.pairs(im, fn)
			}
		}
	}
}

// integer checks a whole number: the decoder would truncate a fraction and
// wrap a number too large for the field. A whole number that fits is left
// to the checks after decoding (Expand), which report every problem of the
// document at once; one that does not fit is refused with the field's
// range.
func (c *shapeChecker) integer(n *yaml.Node, t reflect.Type, path string, r intRange) {
	if n.Kind != yaml.ScalarNode {
		c.wrongType(n, path, "an integer")
		return
	}
	// The field's type, decoded into a value that outgrows it, says
	// whether the number fits.
	bigger := reflect.TypeFor[int64]()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr {
		bigger = reflect.TypeFor[uint64]()
	}
	fits := func(v reflect.Value) bool {
		if v.CanInt() {
			return !reflect.Zero(t).OverflowInt(v.Int())
		}
		return !reflect.Zero(t).OverflowUint(v.Uint())
	}
	bad := func() {
		switch f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); {
		case r.set:
			c.add(n, path, "must be a whole number between %d and %d (got %s)", r.min, r.max, n.Value)
		case err == nil && f != math.Trunc(f):
			c.add(n, path, "must be a whole number (got %s)", n.Value)
		default:
			c.add(n, path, "is out of range (got %s)", n.Value)
		}
	}
	switch tag := n.ShortTag(); {
	case tag == "!!int":
		v := reflect.New(bigger)
		if err := n.Decode(v.Interface()); err != nil || !fits(v.Elem()) {
			bad()
		}
	case tag == "!!float" && c.tag == "yaml":
		var f float64
		if err := n.Decode(&f); err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
			bad()
			return
		}
		v := reflect.New(bigger).Elem()
		if f < 0 {
			if !v.CanInt() {
				bad()
				return
			}
			v.SetInt(int64(f))
		} else if v.CanInt() {
			v.SetInt(int64(f))
		} else {
			v.SetUint(uint64(f))
		}
		if !fits(v) {
			bad()
		}
	default:
		c.wrongType(n, path, "an integer")
	}
}

// float checks a number: NaN and the infinities are no quantity.
func (c *shapeChecker) float(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode {
		c.wrongType(n, path, "a number")
		return
	}
	switch n.ShortTag() {
	case "!!int":
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			c.add(n, path, "must be a finite number (got %s)", n.Value)
		}
	default:
		c.wrongType(n, path, "a number")
	}
}

func (c *shapeChecker) isBool(n *yaml.Node) bool {
	if n.ShortTag() == "!!bool" {
		return true
	}
	if c.tag == "json" || n.ShortTag() != "!!str" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return false
	}
	switch n.Value { // YAML 1.1 booleans, which the decoder still takes into a bool
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

func (c *shapeChecker) wrongType(n *yaml.Node, path, want string) {
	got := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[n.Kind]
	if got == "" {
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		got = fmt.Sprintf("%s %q", tagName(strings.TrimPrefix(n.ShortTag(), "!!")), v)
	}
	c.add(n, path, "wrong type: got %s, want %s", got, want)
}

// intRange is the allowed range of a whole-number field.
type intRange struct {
	min, max int64
	set      bool
}

// shapeField is a struct field as the decoders see it.
type shapeField struct {
	name string
	typ  reflect.Type
	rng  intRange
	// zero is the field's `zero` tag: a field whose zero value means "not
	// set" to the code that reads it, and for which a written 0 makes no
	// sense, carries `zero:"RULE|HINT"`; the document check refuses a
	// written zero with "RULE (got 0): HINT" instead of letting it pass as
	// unset. A written value always counts: where 0 is a value, the field
	// is a pointer (or 0 is its meaning) and carries no tag.
	zero string
}

// refuseZero reports the zero value written at n for a field with a zero
// tag. A value of the wrong type was reported already; it is skipped.
func (c *shapeChecker) refuseZero(n *yaml.Node, f shapeField, path string) {
	n = c.resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return
	}
	t := f.typ
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil || !v.Elem().IsZero() {
		return
	}
	rule, hint, _ := strings.Cut(f.zero, "|")
	msg := fmt.Sprintf("%s (got %s)", rule, n.Value)
	if hint != "" {
		msg += ": " + hint
	}
	c.add(n, path, "%s", msg)
}

// shapeFields are the fields of a struct, inlined ones included, and the
// map that takes other keys (an inline map), if any.
type shapeFields struct {
	list []shapeField
	rest reflect.Type
}

func (fs shapeFields) lookup(key string, foldCase bool) (shapeField, bool) {
	for _, f := range fs.list {
		if f.name == key || foldCase && strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return shapeField{}, false
}

// structFields lists t's fields under their names in c.tag, as the decoder
// names them: the tag's name, else (yaml) the field's name in lower case or
// (json) as written; "-" skips a field; yaml's ",inline" and json's
// untagged embedded structs lift the fields of the inner struct. The list
// depends on the type and the tag only, so it is made once for each
// (shapeFieldCache): every submission walks the same few types.
func (c *shapeChecker) structFields(t reflect.Type) shapeFields {
	key := shapeFieldKey{t: t, tag: c.tag}
	if fs, ok := shapeFieldCache.Load(key); ok {
		return fs.(shapeFields)
	}
	fs := c.listFields(t)
	shapeFieldCache.Store(key, fs)
	return fs
}

// shapeFieldCache holds structFields' lists, never modified once stored.
var shapeFieldCache sync.Map // shapeFieldKey → shapeFields

type shapeFieldKey struct {
	t   reflect.Type
	tag string
}

// listFields makes structFields' list.
func (c *shapeChecker) listFields(t reflect.Type) shapeFields {
	var out shapeFields
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get(c.tag)
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		inline := c.tag == "yaml" && strings.Contains(","+opts+",", ",inline,") ||
			c.tag == "json" && f.Anonymous && name == "" && ft.Kind() == reflect.Struct
		if inline {
			switch ft.Kind() {
			case reflect.Struct:
				inner := c.structFields(ft)
				out.list = append(out.list, inner.list...)
				if inner.rest != nil {
					out.rest = inner.rest
				}
			case reflect.Map:
				out.rest = ft
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
			if c.tag == "yaml" {
				name = strings.ToLower(f.Name)
			}
		}
		out.list = append(out.list, shapeField{name: name, typ: f.Type, rng: fieldRanges[t][f.Name], zero: f.Tag.Get("zero")})
	}
	return out
}

// fieldRanges are the ranges of whole-number fields, by struct and Go field
// name, that the document check names in its message: a number outside
// them is refused with the range, before the decoder could truncate it.
// The checks of Expand hold the same limits for values built in Go.
var fieldRanges = map[reflect.Type]map[string]intRange{
	reflect.TypeFor[Job](): {
		"Priority": {MinPriority, MaxPriority, true},
	},
	reflect.TypeFor[Task](): {
		"Count": {1, MaxTasksPerJob, true}, // 0 is refused too (its zero tag)
	},
	reflect.TypeFor[Resources](): {
		"GPUs": {0, MaxGPUs, true},
	},
}
