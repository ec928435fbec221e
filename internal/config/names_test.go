package config

import (
	"fmt"
	"testing"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// The documents check dispatcher modes and selection strategies without the
// engine (model's lists, spec's checks): they accept and refuse exactly
// what the engine does, with its messages.
func TestDocumentsKnowTheEnginesModesAndStrategies(t *testing.T) {
	for i, name := range model.DispatchModes {
		if got := place.Mode(i).String(); got != name {
			t.Errorf("mode %d is %q in model, %q in the engine", i, name, got)
		}
	}
	for i, name := range model.SelectionStrategies {
		if got := place.Strategy(i).String(); got != name {
			t.Errorf("strategy %d is %q in model, %q in the engine", i, name, got)
		}
	}
	for _, name := range append(model.DispatchModes, "", "fastest", "first-fit") {
		_, want := place.ParseMode(name)
		if got := spec.CheckDispatchMode(name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("mode %q: spec says %v, the engine %v", name, got, want)
		}
	}
	for _, name := range append(model.SelectionStrategies, "", "random", "adaptive") {
		_, want := place.ParseStrategy(name)
		if got := spec.CheckSelectionStrategy(name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("strategy %q: spec says %v, the engine %v", name, got, want)
		}
	}
}
