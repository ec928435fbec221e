package engine_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/scenario"
)

// A running attempt that has run longer than its usual runtime is not
// expected to end at once: it runs at least as long as the longest of its
// peers, or until its timeout, or (past everything known) as long again.
// The estimate says how sure it is, and a runtime nothing estimates makes
// the start unknown rather than a default.
func TestEstimateUsesElapsedTimeAndSaysHowSure(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		runtime    func(string, *model.Task) (engine.RuntimeEstimate, bool)
		known      bool
		wait       time.Duration
		confidence string
		note       []string
	}{
		{name: "within its declared duration", file: "busy-10m", known: true, wait: 10 * time.Minute, confidence: "high"},
		{name: "past its duration, with a timeout", file: "overrun", known: true, wait: 100 * time.Minute, confidence: "medium",
			runtime: func(job string, _ *model.Task) (engine.RuntimeEstimate, bool) {
				if job != "long" {
					return engine.RuntimeEstimate{}, false
				}
				return engine.RuntimeEstimate{Typical: 5 * time.Minute, Timeout: 2 * time.Hour, Basis: engine.BasisDeclared}, true
			}, note: []string{"timeout"}},
		{name: "past its duration and its peers: as long again", file: "overrun", known: true, wait: 20 * time.Minute, confidence: "low",
			note: []string{"as long again"}},
		{name: "past its usual runtime: the longest of its peers", file: "overrun", known: true, wait: 25 * time.Minute, confidence: "medium",
			runtime: func(job string, _ *model.Task) (engine.RuntimeEstimate, bool) {
				if job != "long" {
					return engine.RuntimeEstimate{}, false
				}
				return engine.RuntimeEstimate{Typical: 5 * time.Minute, Longest: 45 * time.Minute, Basis: engine.BasisObserved}, true
			}, note: []string{"longest of its peers"}},
		{name: "nothing estimates the running task", file: "no-history", known: false,
			note: []string{"long/t", "duration", "timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.Load(filepath.Join("testdata", "explain", tc.file+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			e, err := s.Engine()
			if err != nil {
				t.Fatal(err)
			}
			x := engine.EstimateStart(e, "next", s.Start, engine.WhatIf{Runtime: tc.runtime})
			if x.Known != tc.known || tc.known && (x.Wait() != tc.wait || x.Confidence != tc.confidence) {
				t.Errorf("estimate %+v, want known %v in %v with confidence %q", x, tc.known, tc.wait, tc.confidence)
			}
			if !tc.known && !x.Start.IsZero() {
				t.Errorf("an unknown estimate has a start: %+v", x)
			}
			for _, w := range tc.note {
				if !strings.Contains(x.Note, w) {
					t.Errorf("note %q does not say %q", x.Note, w)
				}
			}
		})
	}
}
