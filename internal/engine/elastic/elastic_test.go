package elastic

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func on() Config {
	c := DefaultConfig()
	c.Enabled = true
	return c
}

// ready returns n idle ready workers w0…, idle since the given offsets
// before t0 (the last offset repeats).
func ready(n int, idle ...time.Duration) []Worker {
	var out []Worker
	for i := 0; i < n; i++ {
		d := idle[min(i, len(idle)-1)]
		out = append(out, Worker{Name: fmt.Sprint("w", i), State: model.WorkerReady, Slots: 1, IdleSince: t0.Add(-d)})
	}
	return out
}

func acts(as []Action) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, a.Worker+"→"+string(a.State))
	}
	return strings.Join(parts, " ")
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		cfg     func(c *Config)
		workers []Worker
		queue   int
		want    string
	}{
		{"idle past idleSeconds with an empty queue: disable, keeping one", nil,
			ready(3, 2*time.Minute), 0, "w0→disabled w1→disabled"},
		{"longest idle goes first", nil,
			ready(3, time.Minute, 5*time.Minute, 3*time.Minute), 0, "w1→disabled w2→disabled"},
		{"not idle long enough", nil, ready(3, 59*time.Second), 0, ""},
		{"busy workers stay", nil,
			[]Worker{{Name: "a", State: model.WorkerReady, Running: 1}, {Name: "b", State: model.WorkerReady, IdleSince: t0.Add(-time.Hour)}}, 0, "b→disabled"},
		{"minActiveWorkers counts the busy ones", func(c *Config) { c.MinActiveWorkers = 2 },
			[]Worker{{Name: "a", State: model.WorkerReady, Running: 1}, {Name: "b", State: model.WorkerReady, IdleSince: t0.Add(-time.Hour)}}, 0, ""},
		{"a queue above queueMaxForDisable keeps them", func(c *Config) { c.QueueMaxForDisable, c.QueueThresholdForEnable = 2, 5 },
			ready(3, time.Hour), 3, ""},
		{"a queue at queueMaxForDisable still disables", func(c *Config) { c.QueueMaxForDisable, c.QueueThresholdForEnable = 2, 5 },
			ready(2, time.Hour), 2, "w0→disabled"},
		{"minActiveWorkers 0 may disable all", func(c *Config) { c.MinActiveWorkers = 0 }, ready(2, time.Hour), 0, "w0→disabled w1→disabled"},
		{"draining workers are left alone", nil,
			[]Worker{{Name: "d", State: model.WorkerDraining, IdleSince: t0.Add(-time.Hour)}, {Name: "r", State: model.WorkerReady}}, 0, ""},
		{"within the cooldown nothing is disabled", nil,
			[]Worker{{Name: "a", State: model.WorkerReady, IdleSince: t0.Add(-time.Hour), LastToggle: t0.Add(-30 * time.Second)}, {Name: "b", State: model.WorkerReady, Running: 1}}, 0, ""},
		{"switched off", func(c *Config) { c.Enabled = false }, ready(3, time.Hour), 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := on()
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := acts(c.Decide(t0, tc.workers, tc.queue)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The seed's third testing idea: disable a worker, queue new work, and see
// the queue crossing the enable threshold bring it back.
func TestElasticRecoveryWhenTheQueueCrossesTheThreshold(t *testing.T) {
	c := on()
	c.QueueThresholdForEnable = 3
	co, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	workers := []Worker{
		{Name: "keep", State: model.WorkerReady, Slots: 1, IdleSince: t0.Add(-time.Hour)},
		{Name: "spare", State: model.WorkerReady, Slots: 2, IdleSince: t0.Add(-2 * time.Hour)},
		{Name: "spare2", State: model.WorkerReady, Slots: 2, IdleSince: t0.Add(-time.Hour)},
	}
	// An idle fleet and an empty queue: all but one go.
	got := co.Poll(t0, workers, 0)
	if acts(got) != "spare→disabled keep→disabled" {
		t.Fatalf("first poll %v", acts(got))
	}
	apply := func(as []Action) {
		for _, a := range as {
			for i := range workers {
				if workers[i].Name == a.Worker {
					workers[i].State = a.State
				}
			}
		}
	}
	apply(got)
	// Work arrives, but no more than the threshold: nothing changes.
	later := t0.Add(2 * time.Minute)
	workers[2].Running, workers[2].IdleSince = 1, later
	if got := co.Poll(later, workers, 3); len(got) != 0 {
		t.Fatalf("queue at the threshold: %v", acts(got))
	}
	// Crossing it brings back disabled workers, longest disabled first (a
	// tie goes to the input order), until their slots cover the excess:
	// 4 − 3 = 1 task, and keep has one slot.
	got = co.Poll(later, workers, 4)
	if acts(got) != "keep→ready" || !strings.Contains(got[0].Reason, "4 tasks queued, above queueThresholdForEnable 3") {
		t.Fatalf("queue 4: %+v", got)
	}
	apply(got)
	// A larger excess brings back the rest.
	got = co.Poll(later.Add(time.Minute), workers, 9)
	if acts(got) != "spare→ready" {
		t.Fatalf("queue 9: %v", acts(got))
	}
}

func TestMinActiveWorkersIsRestored(t *testing.T) {
	c := on()
	c.MinActiveWorkers = 2
	ws := []Worker{{Name: "a", State: model.WorkerDisabled}, {Name: "b", State: model.WorkerDisabled}, {Name: "c", State: model.WorkerReady}}
	got := c.Decide(t0, ws, 0)
	if acts(got) != "a→ready" || !strings.Contains(got[0].Reason, "below minActiveWorkers 2") {
		t.Fatalf("got %+v", got)
	}
}

func TestTogglesRespectTheCooldown(t *testing.T) {
	co, err := New(on())
	if err != nil {
		t.Fatal(err)
	}
	w := Worker{Name: "a", State: model.WorkerReady, IdleSince: t0.Add(-time.Hour)}
	// A manual toggle is recorded and starts the cooldown...
	if err := co.Toggle(w, t0); err != nil {
		t.Fatal(err)
	}
	w.State = model.WorkerDisabled
	// ...which holds back a second manual toggle...
	err = co.Toggle(w, t0.Add(20*time.Second))
	if !errors.Is(err, ErrCooldown) || !strings.Contains(err.Error(), "wait 40s") {
		t.Fatalf("second toggle: %v", err)
	}
	// ...and the coordinator, even with work queued.
	if got := co.Poll(t0.Add(59*time.Second), []Worker{w}, 10); len(got) != 0 {
		t.Fatalf("within the cooldown: %v", acts(got))
	}
	if got := co.Poll(t0.Add(60*time.Second), []Worker{w}, 10); acts(got) != "a→ready" {
		t.Fatalf("after the cooldown: %v", acts(got))
	}
	// The coordinator's own toggle starts a cooldown for the operator.
	if err := co.Toggle(w, t0.Add(90*time.Second)); !errors.Is(err, ErrCooldown) {
		t.Fatalf("manual toggle right after an automatic one: %v", err)
	}
	co.Forget("a")
	if err := co.Toggle(w, t0.Add(90*time.Second)); err != nil {
		t.Fatalf("after Forget: %v", err)
	}
}

func TestValidateNamesTheSetting(t *testing.T) {
	cases := []struct {
		cfg  func(c *Config)
		want string
	}{
		{func(c *Config) { c.MinActiveWorkers = -1 }, "minActiveWorkers: must not be negative"},
		{func(c *Config) { c.IdleAfter = -time.Second }, "idleSeconds: must not be negative"},
		{func(c *Config) { c.QueueMaxForDisable = -1 }, "queueMaxForDisable: must not be negative"},
		{func(c *Config) { c.ToggleCooldown = -time.Second }, "toggleCooldownSeconds: must not be negative"},
		{func(c *Config) { c.PollInterval = 0 }, "pollIntervalSeconds: must be above 0"},
		{func(c *Config) { c.QueueMaxForDisable, c.QueueThresholdForEnable = 5, 2 }, "queueThresholdForEnable: is 2, below queueMaxForDisable 5"},
	}
	for _, tc := range cases {
		c := on()
		tc.cfg(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	if err := on().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
