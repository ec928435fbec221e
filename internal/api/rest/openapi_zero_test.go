package rest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// A field whose written 0 the API refuses (its `zero` tag) is documented in
// openapi.json with minimum 1, and the others keep theirs: a client that
// reads the schema must not send a 0 the server refuses.
func TestOpenAPIMinimumFollowsTheZeroTags(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Minimum *float64 `json:"minimum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	variants, ok := reflect.TypeFor[spec.Endpoint]().FieldByName("Variants")
	if !ok {
		t.Fatal("spec.Endpoint has no Variants")
	}
	for schema, typ := range map[string]reflect.Type{
		"Register":        reflect.TypeFor[api.Register](),
		"Throttling":      reflect.TypeFor[spec.Throttling](),
		"EndpointSpec":    reflect.TypeFor[spec.Endpoint](),
		"EndpointVariant": variants.Type.Elem(),
	} {
		props := doc.Components.Schemas[schema].Properties
		if len(props) == 0 {
			t.Fatalf("openapi.json has no schema %s", schema)
		}
		zeroed := 0
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if f.Tag.Get("zero") == "" {
				continue
			}
			zeroed++
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p, ok := props[name]
			if !ok {
				t.Errorf("%s.%s: not documented", schema, name)
				continue
			}
			if p.Minimum == nil {
				t.Errorf("%s.%s: a written 0 is refused, but openapi.json documents no minimum, want 1", schema, name)
			} else if *p.Minimum != 1 {
				t.Errorf("%s.%s: a written 0 is refused, but openapi.json documents minimum %v, want 1", schema, name, *p.Minimum)
			}
		}
		if zeroed == 0 {
			t.Errorf("%s: no field with a zero tag: the test checks nothing", schema)
		}
	}
}
