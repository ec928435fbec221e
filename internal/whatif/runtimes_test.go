package whatif

import (
	"testing"
	"time"
)

func TestWindowMedianOfTheLatestRuns(t *testing.T) {
	var w Window
	if _, ok := w.Median(); ok {
		t.Error("an empty window has a median")
	}
	for i := 1; i <= MinSamples-1; i++ {
		w.Add(time.Duration(i) * time.Second)
	}
	if _, ok := w.Median(); ok {
		t.Errorf("%d samples give a median; want at least %d", MinSamples-1, MinSamples)
	}
	w.Add(100 * time.Second) // 1 2 3 4 100 s
	if m, ok := w.Median(); !ok || m != 3*time.Second {
		t.Errorf("median = %v %v, want 3s", m, ok)
	}
	for range WindowLen {
		w.Add(time.Minute) // the old runs leave the window
	}
	if m, _ := w.Median(); m != time.Minute || w.Len() != WindowLen {
		t.Errorf("median %v over %d samples, want 1m over %d", m, w.Len(), WindowLen)
	}
}
