package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// -o yaml prints what -o json prints, as YAML, for plan and sim as for the
// client commands.
func TestPlanAndSimPrintYAML(t *testing.T) {
	examples := filepath.Join("..", "..", "examples")
	for _, args := range [][]string{
		{"plan", "-f", filepath.Join(examples, "fifo.yaml")},
		{"sim", "-f", filepath.Join(examples, "fairshare-reservation.yaml")},
	} {
		var fromJSON, fromYAML any
		if err := json.Unmarshal(run(t, append(args, "-o", "json")...), &fromJSON); err != nil {
			t.Fatalf("%v -o json: %v", args, err)
		}
		if err := yaml.Unmarshal(run(t, append(args, "-o", "yaml")...), &fromYAML); err != nil {
			t.Fatalf("%v -o yaml: %v", args, err)
		}
		// YAML reads whole numbers as ints; compare through JSON.
		b, _ := json.Marshal(fromYAML)
		var again any
		_ = json.Unmarshal(b, &again)
		if !reflect.DeepEqual(again, fromJSON) {
			t.Errorf("%v: -o yaml and -o json differ", args)
		}
	}
}
