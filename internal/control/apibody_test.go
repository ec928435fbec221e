package control

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
)

// fill sets every exported field of v, however deep, to a value other than
// its zero (one element in a list, one key in a map), so that a field the
// conversion to the API drops shows in the JSON.
func fill(v reflect.Value, depth int) {
	if depth > 10 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(4)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	}
}

func sameJSONBody(t *testing.T, what string, engineValue, apiValue any) {
	t.Helper()
	want, err := json.Marshal(engineValue)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(apiValue)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: the API's JSON differs from the engine's:\n got %s\nwant %s", what, got, want)
	}
}

// The API's bodies are the engine's answers field for field: a field the
// engine adds to its explanation or its endpoint metrics and the API's
// type lacks fails here, not silently on the wire.
func TestAPIBodiesCarryEveryFieldOfTheEngines(t *testing.T) {
	var x engine.Explanation
	fill(reflect.ValueOf(&x).Elem(), 0)
	ax, err := APIExplanation(x)
	if err != nil {
		t.Fatal(err)
	}
	sameJSONBody(t, "explanation", x, ax)
	sameJSONBody(t, "empty explanation", engine.Explanation{}, func() any {
		a, _ := APIExplanation(engine.Explanation{})
		return a
	}())

	var s admit.EndpointStats
	fill(reflect.ValueOf(&s).Elem(), 0)
	sameJSONBody(t, "endpoint stats", s, apiEndpointStats(s))
	sameJSONBody(t, "empty endpoint stats", admit.EndpointStats{}, apiEndpointStats(admit.EndpointStats{}))
}
