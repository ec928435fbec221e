package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// PolicySettings is one policy's own configuration block (the `fairshare:`
// block beside `kind: fairshare`): a pointer to the config type the
// policy's package declares. The package owns the type, so adding a
// setting or a policy never touches this package.
type PolicySettings interface {
	// Validate reports the first problem in the block as a *FieldError,
	// its path from the block's key (fairshare.shares[1].weightFactor), so
	// that the caller roots it under where the block sits
	// (queues[0].policy) without parsing text. It is called on a nil
	// pointer when the block is absent.
	Validate() error
}

// PolicyConfig is the `policy:` block of a queue:
//
//	policy:
//	  kind: fairshare
//	  fairshare: {shareDecaySeconds: 3600}
//
// Kind picks the policy; Settings is its own block, of the config type its
// package declares. Blocks named for other registered policies may stand
// beside it: they are decoded (so a mistake in them is still reported) and
// kept, so the config reads back as it was written, but otherwise ignored.
// It lives here, not with the policies, so that the documents that carry
// it (package spec) are read without linking the engine; the engine's
// policy registry makes each block known (RegisterPolicyBlock).
type PolicyConfig struct {
	Kind string
	// Usage is how the policy measures usage and entitlement: "slots"
	// (the default when empty) or "dominant" (dominant resource shares);
	// policy.New checks it against Kind.
	Usage string
	// Settings is Kind's block, nil when it is absent (the policy's
	// defaults).
	Settings PolicySettings
	// others holds the other policies' blocks, by kind.
	others map[string]PolicySettings
}

// policyBlocks holds the block types RegisterPolicyBlock made known, and
// the shape of a `policy:` block built from them.
var policyBlocks struct {
	sync.Mutex
	types map[string]PolicySettings
	shape *policyShape // nil until asked for after a change
}

// RegisterPolicyBlock makes the block of the policy name decodable in a
// `policy:` block: zero is a nil pointer of its config type, e.g.
// (*fairshare.Config)(nil). A nil zero removes the block (a policy without
// settings). The engine's policy registry calls it for every policy, so
// the set of blocks is that of the registered policies.
func RegisterPolicyBlock(name string, zero PolicySettings) {
	policyBlocks.Lock()
	defer policyBlocks.Unlock()
	if policyBlocks.types == nil {
		policyBlocks.types = map[string]PolicySettings{}
	}
	if zero == nil {
		delete(policyBlocks.types, name)
	} else {
		policyBlocks.types[name] = zero
	}
	policyBlocks.shape = nil
}

// policyShape is the Go type a `policy:` block decodes into: a struct with
// the field kind and one field per registered policy with settings, named
// by the policy and of its config type. It is built from the registry, so
// a new policy brings its block with it.
type policyShape struct {
	typ   reflect.Type
	kinds []string // the block of field i+policyFirstBlock
}

// policyFirstBlock is the index of the first policy block among the
// shape's fields, after kind and usage.
const policyFirstBlock = 2

// currentPolicyShape returns the shape of the registered blocks.
func currentPolicyShape() *policyShape {
	policyBlocks.Lock()
	defer policyBlocks.Unlock()
	if policyBlocks.shape != nil {
		return policyBlocks.shape
	}
	sh := &policyShape{}
	for name := range policyBlocks.types {
		sh.kinds = append(sh.kinds, name)
	}
	sort.Strings(sh.kinds)
	fields := []reflect.StructField{{Name: "Kind", Type: reflect.TypeFor[string](), Tag: `yaml:"kind" json:"kind"`},
		{Name: "Usage", Type: reflect.TypeFor[string](), Tag: `yaml:"usage,omitempty" json:"usage,omitempty"`}}
	for i, name := range sh.kinds {
		fields = append(fields, reflect.StructField{
			Name: fmt.Sprintf("Block%d", i),
			Type: reflect.TypeOf(policyBlocks.types[name]),
			Tag:  reflect.StructTag(fmt.Sprintf(`yaml:"%s,omitempty" json:"%s,omitempty"`, name, name)),
		})
	}
	sh.typ = reflect.StructOf(fields)
	policyBlocks.shape = sh
	return sh
}

// Shape returns a pointer to a zero value of the type the block decodes
// into, for checkers that walk a document against Go types (spec's shape
// checker): the block's fields are those of the registered policies.
func (PolicyConfig) Shape() any { return reflect.New(currentPolicyShape().typ).Interface() }

// to fills a value of the shape from c.
func (c PolicyConfig) to(sh *policyShape) reflect.Value {
	v := reflect.New(sh.typ).Elem()
	v.Field(0).SetString(c.Kind)
	v.Field(1).SetString(c.Usage)
	for i, name := range sh.kinds {
		var s PolicySettings
		if name == c.Kind {
			s = c.Settings
		} else {
			s = c.others[name]
		}
		if s != nil && reflect.TypeOf(s) == v.Field(i+policyFirstBlock).Type() {
			v.Field(i + policyFirstBlock).Set(reflect.ValueOf(s))
		}
	}
	return v
}

// from sets c from a value of the shape.
func (c *PolicyConfig) from(sh *policyShape, v reflect.Value) {
	*c = PolicyConfig{Kind: v.Field(0).String(), Usage: v.Field(1).String()}
	for i, name := range sh.kinds {
		f := v.Field(i + policyFirstBlock)
		if f.IsNil() {
			continue
		}
		s := f.Interface().(PolicySettings)
		if name == c.Kind {
			c.Settings = s
			continue
		}
		if c.others == nil {
			c.others = map[string]PolicySettings{}
		}
		c.others[name] = s
	}
}

// UnmarshalYAML reads the block through the YAML decoder that called it,
// so its strictness (unknown fields) and its line numbers carry into the
// policies' blocks.
func (c *PolicyConfig) UnmarshalYAML(unmarshal func(any) error) error {
	sh := currentPolicyShape()
	v := reflect.New(sh.typ)
	err := unmarshal(v.Interface())
	c.from(sh, v.Elem())
	return err
}

// MarshalYAML writes kind and the blocks present.
func (c PolicyConfig) MarshalYAML() (any, error) {
	return c.to(currentPolicyShape()).Interface(), nil
}

// UnmarshalJSON reads the block; unknown fields are refused, as a
// misspelt key must not silently drop a setting.
func (c *PolicyConfig) UnmarshalJSON(b []byte) error {
	sh := currentPolicyShape()
	v := reflect.New(sh.typ)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		return err
	}
	c.from(sh, v.Elem())
	return nil
}

// MarshalJSON writes kind and the blocks present.
func (c PolicyConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.to(currentPolicyShape()).Interface())
}
