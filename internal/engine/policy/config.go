package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// Config is the `policy:` block of a queue:
//
//	policy:
//	  kind: fairshare
//	  fairshare: {shareDecaySeconds: 3600}
//
// Kind picks the policy; Settings is its own block, of the config type its
// package declares. Blocks named for other registered policies may stand
// beside it: they are decoded (so a mistake in them is still reported) and
// kept, so the config reads back as it was written, but otherwise ignored.
type Config struct {
	Kind string
	// Settings is Kind's block, nil when it is absent (the policy's
	// defaults).
	Settings Settings
	// others holds the other policies' blocks, by kind.
	others map[string]Settings
}

// kind returns the policy kind, fifo when unset.
func (c Config) kind() string {
	if c.Kind == "" {
		return "fifo"
	}
	return c.Kind
}

// shape is the Go type a `policy:` block decodes into: a struct with the
// field kind and one field per registered policy with settings, named by
// the policy and of its config type. It is built from the registry, so a
// new policy brings its block with it.
type shape struct {
	typ   reflect.Type
	kinds []string // the block of field i+1
}

// currentShape returns the shape of the registered policies.
func currentShape() *shape {
	registry.Lock()
	defer registry.Unlock()
	if registry.shape != nil {
		return registry.shape
	}
	sh := &shape{}
	for name, k := range registry.kinds {
		if k.Settings != nil {
			sh.kinds = append(sh.kinds, name)
		}
	}
	sort.Strings(sh.kinds)
	fields := []reflect.StructField{{Name: "Kind", Type: reflect.TypeFor[string](), Tag: `yaml:"kind" json:"kind"`}}
	for i, name := range sh.kinds {
		fields = append(fields, reflect.StructField{
			Name: fmt.Sprintf("Block%d", i),
			Type: reflect.TypeOf(registry.kinds[name].Settings),
			Tag:  reflect.StructTag(fmt.Sprintf(`yaml:"%s,omitempty" json:"%s,omitempty"`, name, name)),
		})
	}
	sh.typ = reflect.StructOf(fields)
	registry.shape = sh
	return sh
}

// Shape returns a pointer to a zero value of the type the block decodes
// into, for checkers that walk a document against Go types (spec's shape
// checker): the block's fields are those of the registered policies.
func (Config) Shape() any { return reflect.New(currentShape().typ).Interface() }

// to fills a value of the shape from c.
func (c Config) to(sh *shape) reflect.Value {
	v := reflect.New(sh.typ).Elem()
	v.Field(0).SetString(c.Kind)
	for i, name := range sh.kinds {
		var s Settings
		if name == c.Kind {
			s = c.Settings
		} else {
			s = c.others[name]
		}
		if s != nil && reflect.TypeOf(s) == v.Field(i+1).Type() {
			v.Field(i + 1).Set(reflect.ValueOf(s))
		}
	}
	return v
}

// from sets c from a value of the shape.
func (c *Config) from(sh *shape, v reflect.Value) {
	*c = Config{Kind: v.Field(0).String()}
	for i, name := range sh.kinds {
		f := v.Field(i + 1)
		if f.IsNil() {
			continue
		}
		s := f.Interface().(Settings)
		if name == c.Kind {
			c.Settings = s
			continue
		}
		if c.others == nil {
			c.others = map[string]Settings{}
		}
		c.others[name] = s
	}
}

// UnmarshalYAML reads the block through the YAML decoder that called it,
// so its strictness (unknown fields) and its line numbers carry into the
// policies' blocks.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	sh := currentShape()
	v := reflect.New(sh.typ)
	err := unmarshal(v.Interface())
	c.from(sh, v.Elem())
	return err
}

// MarshalYAML writes kind and the blocks present.
func (c Config) MarshalYAML() (any, error) {
	return c.to(currentShape()).Interface(), nil
}

// UnmarshalJSON reads the block; unknown fields are refused, as a
// misspelt key must not silently drop a setting.
func (c *Config) UnmarshalJSON(b []byte) error {
	sh := currentShape()
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
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.to(currentShape()).Interface())
}
