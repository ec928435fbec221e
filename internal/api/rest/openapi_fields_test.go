package rest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

// Every JSON field of an API type is a property of the schema openapi.json
// gives it: a field added to a type (gpus, dependsOn, heldBy, warnings,
// cpuSeconds, attempts, unconfined, ...) is documented where a client reads
// it. A schema is named by its path from components/schemas, through
// properties and array items.
func TestOpenAPIDocumentsEveryFieldOfTheAPITypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		schema string
		value  any
	}{
		{"Job", api.Job{}},
		{"Job/warnings", api.Warning{}},
		{"Job/dependsOn", api.JobDependency{}},
		{"Task", api.Task{}},
		{"AttemptUsage", api.AttemptUsage{}},
		{"JobList", api.JobList{}},
		{"Logs", api.Logs{}},
		{"Logs/tasks", api.TaskLog{}},
		{"Worker", api.Worker{}},
		{"Register", api.Register{}},
		{"GPUDevice", model.GPUDevice{}},
		{"Attempt", api.Attempt{}},
		{"LeaseRequest", api.LeaseRequest{}},
		{"Lease", api.Lease{}},
		{"Lease/assignments", api.Assignment{}},
		{"Lease/stops", api.StopOrder{}},
		{"Reports", api.Reports{}},
		{"Reports/reports", api.Report{}},
		{"OutputChunks", api.OutputChunks{}},
		{"OutputChunks/chunks", api.OutputChunk{}},
		{"Usage", api.Usage{}},
		{"UsageRow", api.UsageRow{}},
		{"Event", api.Event{}},
		{"Queue", api.Queue{}},
		{"ResourcesChange", api.ResourcesChange{}},
		{"BulkResults", api.BulkResults{}},
		{"BulkResult", api.BulkResult{}},
		{"CreateToken", api.CreateToken{}},
		{"Token", api.Token{}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			props := schemaProperties(t, doc.Components.Schemas, tc.schema)
			for _, name := range jsonFields(reflect.TypeOf(tc.value)) {
				if _, ok := props[name]; !ok {
					t.Errorf("%T has field %q, which openapi.json's %s does not document", tc.value, name, tc.schema)
				}
			}
		})
	}
}

// schemaProperties returns the properties of the schema at path (a schema
// name, then property names; array items and $refs are followed).
func schemaProperties(t *testing.T, schemas map[string]json.RawMessage, path string) map[string]json.RawMessage {
	t.Helper()
	type node struct {
		Ref        string                     `json:"$ref"`
		Type       string                     `json:"type"`
		Items      json.RawMessage            `json:"items"`
		Properties map[string]json.RawMessage `json:"properties"`
		AllOf      []json.RawMessage          `json:"allOf"`
	}
	resolve := func(raw json.RawMessage) node {
		for {
			var n node
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			switch {
			case n.Ref != "":
				name, ok := strings.CutPrefix(n.Ref, "#/components/schemas/")
				if !ok || strings.Contains(name, "/") {
					t.Fatalf("%s: unexpected $ref %q", path, n.Ref)
				}
				raw = schemas[name]
			case n.Type == "array" && len(n.Items) > 0:
				raw = n.Items
			case len(n.AllOf) == 1:
				raw = n.AllOf[0]
			default:
				return n
			}
		}
	}
	parts := strings.Split(path, "/")
	raw, ok := schemas[parts[0]]
	if !ok {
		t.Fatalf("openapi.json has no schema %s", parts[0])
	}
	n := resolve(raw)
	for _, p := range parts[1:] {
		raw, ok := n.Properties[p]
		if !ok {
			t.Fatalf("openapi.json's %s has no property %s", path, p)
		}
		n = resolve(raw)
	}
	return n.Properties
}

// jsonFields lists the JSON names of a struct's fields, those of embedded
// structs included.
func jsonFields(rt reflect.Type) []string {
	var out []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
