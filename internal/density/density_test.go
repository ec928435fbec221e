package density

import (
	"testing"
	"time"
)

func TestRecorderCarriesWorkerCountsAndCoarsens(t *testing.T) {
	r := NewRecorder(time.Second, 4)
	r.Submitted(0, 3)
	r.Started(0)
	r.Workers(0, 1, 4)
	r.Workers(int64(2500*time.Millisecond), 0, 3)
	step, b := r.Finish(int64(3*time.Second), 4)
	if step != time.Second || len(b) != 4 {
		t.Fatalf("step %v, %d buckets; want 1s, 4", step, len(b))
	}
	want := []Counts{{Submitted: 3, Started: 1, ActiveWorkers: 1, PeakActiveWorkers: 1, EnabledWorkers: 4},
		{ActiveWorkers: 1, PeakActiveWorkers: 1, EnabledWorkers: 4}, {PeakActiveWorkers: 1, EnabledWorkers: 3}, {EnabledWorkers: 3}}
	for i := range want {
		if b[i] != want[i] {
			t.Errorf("bucket %d = %+v, want %+v", i, b[i], want[i])
		}
	}
	r = NewRecorder(time.Second, 0)
	r.Submitted(int64(MaxRecorded)*int64(time.Second), 1)
	if step, b := r.Finish(0, 0); step != 2*time.Second || len(b) > MaxRecorded {
		t.Errorf("after a time past the bound: step %v, %d buckets; want 2s and at most %d", step, len(b), MaxRecorded)
	}
}

func TestWindowFillsGapsAndKeepsTheLatest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewWindow(time.Minute, 3)
	w.SetEnabled(2)
	w.Record(t0, 5, 1, 1)
	w.Record(t0.Add(90*time.Second), 0, 2, 0)
	step, b := w.Series()
	if step != time.Minute || len(b) != 2 || b[0].Submitted != 5 || b[1].Started != 2 || b[1].PeakActiveWorkers != 1 || b[1].EnabledWorkers != 2 {
		t.Fatalf("series %v %+v", step, b)
	}
	w.Record(t0.Add(10*time.Minute), 1, 0, 0)
	if _, b = w.Series(); len(b) != 3 || !b[2].Start.Equal(t0.Add(10*time.Minute)) || !b[0].Start.Equal(t0.Add(8*time.Minute)) {
		t.Fatalf("after a gap: %+v, want the latest 3 buckets", b)
	}
}
