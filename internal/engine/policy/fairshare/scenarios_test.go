package fairshare_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
)

const (
	sec    = time.Second
	minute = time.Minute
)

func wf(v float64) *float64 { return fairshare.Weight(v) }

// Figure 2 of the blog: two shares with the default weight factor share the
// pool evenly over time, whatever their tasks' durations, and a share that
// arrives while the other holds the whole pool gets its half as slots free.
func TestEqualWeightsSplitEvenlyOverTime(t *testing.T) {
	d := newDriver(t, nil, 10)
	d.submit(0, "a", 0, 300, 60*sec)
	d.submit(30*sec, "b", 0, 300, 90*sec)
	d.run(30 * minute)

	if r := d.roundAt(0); r.running["a"] != 10 {
		t.Fatalf("alone, a runs %d of 10 slots, want all", r.running["a"])
	}
	// b arrived at 30s with the pool full; a's tasks end at 60s.
	if r := d.roundAt(60 * sec); r.running["a"] != 5 || r.running["b"] != 5 {
		t.Fatalf("at 60s running a=%d b=%d, want 5/5", r.running["a"], r.running["b"])
	}
	for _, r := range d.rounds {
		if r.at >= 60*sec && abs(r.running["a"]-r.running["b"]) > 1 {
			t.Fatalf("at %v running a=%d b=%d, want even", r.at, r.running["a"], r.running["b"])
		}
	}
	a, b := d.slotSeconds("a", 60*sec, 30*minute), d.slotSeconds("b", 60*sec, 30*minute)
	t.Logf("slot-seconds 1m-30m: a=%.0f b=%.0f ratio %.3f", a, b, a/b)
	if math.Abs(a/b-1) > 0.01 {
		t.Fatalf("slot-seconds a=%.0f b=%.0f, want an even split", a, b)
	}
}

// A weight factor of 0.5 gets twice the capacity of 1.0.
func TestHalfWeightFactorGetsTwiceTheCapacity(t *testing.T) {
	cfg := &fairshare.Config{Shares: []fairshare.ShareWeight{{Share: "a", WeightFactor: wf(0.5)}, {Share: "b", WeightFactor: wf(1)}}}
	d := newDriver(t, cfg, 9)
	d.submit(0, "a", 0, 500, 45*sec)
	d.submit(0, "b", 0, 500, 75*sec)
	d.run(30 * minute)

	for _, r := range d.rounds {
		if r.running["a"] != 2*r.running["b"] {
			t.Fatalf("at %v running a=%d b=%d, want 2:1", r.at, r.running["a"], r.running["b"])
		}
	}
	a, b := d.slotSeconds("a", 0, 30*minute), d.slotSeconds("b", 0, 30*minute)
	t.Logf("slot-seconds 0-30m: a=%.0f b=%.0f ratio %.3f", a, b, a/b)
	if math.Abs(a/b-2) > 0.01 {
		t.Fatalf("slot-seconds a/b = %.3f, want 2", a/b)
	}
	// The per-group summary carries the entitled slots.
	for _, g := range d.rounds[0].d.Groups {
		want := map[string]int{"a": 6, "b": 3}[g.Group]
		if g.Target != want {
			t.Fatalf("target of %s = %d, want %d", g.Group, g.Target, want)
		}
	}
}

// Figure 4: higher-priority jobs jump the queue inside their share; they do
// not take slots from another share.
func TestPriorityJumpsTheQueueWithinAShareOnly(t *testing.T) {
	d := newDriver(t, nil, 4)
	aLow := d.submit(0, "a", 0, 6, 60*sec)
	bLow := d.submit(0, "b", 0, 6, 60*sec)
	aHigh := d.submit(10*sec, "a", 100, 3, 60*sec)
	d.run(10 * minute)

	startsOf := func(at time.Duration) map[string]int {
		out := map[string]int{}
		for _, s := range d.roundAt(at).d.Starts {
			out[s.Job]++
		}
		return out
	}
	if s := startsOf(0); s[aLow] != 2 || s[bLow] != 2 {
		t.Fatalf("starts at 0s = %v, want 2 of each share", s)
	}
	// At 60s four slots free: share a's two go to the high-priority job,
	// share b keeps its two.
	if s := startsOf(60 * sec); s[aHigh] != 2 || s[aLow] != 0 || s[bLow] != 2 {
		t.Fatalf("starts at 60s = %v, want %s=2 %s=2", s, aHigh, bLow)
	}
	if s := startsOf(120 * sec); s[aHigh] != 1 || s[aLow] != 1 || s[bLow] != 2 {
		t.Fatalf("starts at 120s = %v, want the last high task, then low, and b's two", s)
	}
}

func TestReservation50WithTwoShares(t *testing.T) {
	cfg := &fairshare.Config{ComputeReservation: 50, Shares: []fairshare.ShareWeight{{Share: "blue"}, {Share: "green"}}}
	d := newDriver(t, cfg, 8)
	green := d.submit(0, "green", 0, 40, 60*sec)
	d.submit(90*sec, "blue", 0, 20, 60*sec)
	d.run(20 * minute)

	// Alone, green may use 25% + 50% = 75% of the pool.
	if m := d.maxRunning("green", 0, 90*sec); m != 6 {
		t.Fatalf("green alone ran at most %d of 8 slots, want 6 (75%%)", m)
	}
	r, _ := pendingReason(d.roundAt(0).d, green)
	if r.Code != model.ReasonPolicyLimit || !strings.Contains(r.Message, "capacity reserved for shares without jobs: blue") {
		t.Fatalf("green's pending reason = %+v", r)
	}
	t.Logf("green's reason: %s", r.Message)
	// Blue starts at once in its reserved 25%.
	if r := d.roundAt(90 * sec); r.starts["blue"] != 2 {
		t.Fatalf("blue started %d tasks on arrival, want 2 (25%% of 8)", r.starts["blue"])
	}
	// When green's tasks end, the freed slots even the split out.
	if r := d.roundAt(120 * sec); r.running["green"] != 4 || r.running["blue"] != 4 {
		t.Fatalf("at 120s running green=%d blue=%d, want 4/4", r.running["green"], r.running["blue"])
	}
}

func TestReservation75WithThreeShares(t *testing.T) {
	cfg := &fairshare.Config{ComputeReservation: 75,
		Shares: []fairshare.ShareWeight{{Share: "blue"}, {Share: "green"}, {Share: "red"}}}
	d := newDriver(t, cfg, 12)
	d.submit(0, "green", 0, 100, 10*minute)
	d.submit(60*sec, "blue", 0, 100, 10*minute)
	d.submit(120*sec, "red", 0, 100, 10*minute)
	d.run(5 * minute)

	// One active share: 25% of its own and the 25% nobody reserves.
	if m := d.maxRunning("green", 0, 60*sec); m != 6 {
		t.Fatalf("green alone ran %d of 12, want 6 (50%%)", m)
	}
	// Each newcomer gets its 25% at once.
	if r := d.roundAt(60 * sec); r.starts["blue"] != 3 {
		t.Fatalf("blue started %d on arrival, want 3 (25%% of 12)", r.starts["blue"])
	}
	if r := d.roundAt(120 * sec); r.starts["red"] != 3 {
		t.Fatalf("red started %d on arrival, want 3 (25%% of 12)", r.starts["red"])
	}
}

func TestReservation99SplitsTwoSharesEvenly(t *testing.T) {
	cfg := &fairshare.Config{ComputeReservation: 99, Shares: []fairshare.ShareWeight{{Share: "blue"}, {Share: "green"}}}
	d := newDriver(t, cfg, 10)
	d.submit(0, "green", 0, 100, 10*minute)
	d.submit(60*sec, "blue", 0, 100, 10*minute)
	d.run(5 * minute)

	if m := d.maxRunning("green", 0, 60*sec); m != 5 {
		t.Fatalf("green alone ran %d of 10, want 5", m)
	}
	if r := d.roundAt(60 * sec); r.running["blue"] != 5 || r.running["green"] != 5 {
		t.Fatalf("after blue arrives running blue=%d green=%d, want 5/5", r.running["blue"], r.running["green"])
	}
}

// The AWS documentation's model: (R/100)^active held back.
func TestExponentialReservation(t *testing.T) {
	cfg := &fairshare.Config{ComputeReservation: 50, ReservationModel: fairshare.ReservationExponential}
	d := newDriver(t, cfg, 8)
	d.submit(0, "green", 0, 100, 10*minute)
	d.submit(60*sec, "blue", 0, 100, 10*minute)
	d.run(5 * minute)
	if m := d.maxRunning("green", 0, 60*sec); m != 4 {
		t.Fatalf("one active share ran %d of 8, want 4 (50%% held back)", m)
	}
	if r := d.roundAt(60 * sec); r.running["green"]+r.running["blue"] != 6 {
		t.Fatalf("two active shares run %d of 8, want 6 (25%% held back)", r.running["green"]+r.running["blue"])
	}
}

// Fairness over time: a share with heavy past usage gets fewer slots until
// its usage has decayed; with shareDecaySeconds 0 the history is ignored.
func TestDecayedHistoryHoldsBackAHeavyShare(t *testing.T) {
	run := func(decay int) *driver {
		d := newDriver(t, &fairshare.Config{ShareDecaySeconds: decay}, 10)
		// red ran 10 slots for a whole 600 s window before t0.
		d.history(map[string]float64{"red": 6000})
		d.submit(0, "red", 0, 2000, 60*sec)
		d.submit(0, "blue", 0, 2000, 60*sec)
		d.run(60 * minute)
		return d
	}
	windows := []time.Duration{0, 10 * minute, 20 * minute, 30 * minute, 40 * minute, 50 * minute}
	ratios := func(d *driver) []float64 {
		var out []float64
		for _, from := range windows {
			red, blue := d.slotSeconds("red", from, from+10*minute), d.slotSeconds("blue", from, from+10*minute)
			out = append(out, red/blue)
		}
		return out
	}
	decayed, current := ratios(run(600)), ratios(run(0))
	t.Logf("red/blue slot-seconds per 10-minute window, shareDecaySeconds 600: %.3f", decayed)
	t.Logf("red/blue slot-seconds per 10-minute window, shareDecaySeconds 0:   %.3f", current)
	if decayed[0] > 0.6 {
		t.Fatalf("first window red/blue = %.3f, want red held back", decayed[0])
	}
	for i := 1; i < len(decayed); i++ {
		if decayed[i] < decayed[i-1]-0.02 {
			t.Fatalf("red/blue fell from %.3f to %.3f: red should recover as its history decays", decayed[i-1], decayed[i])
		}
	}
	if last := decayed[len(decayed)-1]; math.Abs(last-1) > 0.05 {
		t.Fatalf("after the history decayed red/blue = %.3f, want about 1", last)
	}
	for i, r := range current {
		if math.Abs(r-1) > 0.01 {
			t.Fatalf("shareDecaySeconds 0, window %d: red/blue = %.3f, want 1 (history ignored)", i, r)
		}
	}
}

// Without history, a share that ran alone for a while is held back when
// another share arrives, for about one decay window.
func TestDecayRemembersRecentUsage(t *testing.T) {
	run := func(decay int) (newcomer float64) {
		d := newDriver(t, &fairshare.Config{ShareDecaySeconds: decay}, 10)
		d.submit(0, "a", 0, 2000, 60*sec)
		d.submit(20*minute, "b", 0, 2000, 60*sec)
		d.run(40 * minute)
		from, to := 21*minute, 31*minute
		b, a := d.slotSeconds("b", from, to), d.slotSeconds("a", from, to)
		return b / (a + b)
	}
	withDecay, without := run(600), run(0)
	t.Logf("b's share of the pool in the 10 minutes after arriving: decay 600 s %.3f, decay 0 %.3f", withDecay, without)
	if math.Abs(without-0.5) > 0.01 {
		t.Fatalf("without decay the newcomer got %.3f, want 0.5", without)
	}
	if withDecay < 0.6 {
		t.Fatalf("with decay the newcomer got %.3f, want more than a's half while a's usage decays", withDecay)
	}
}

func TestJobsWithoutShareShareTheDefaultGroup(t *testing.T) {
	d := newDriver(t, nil, 4)
	d.submit(0, "", 0, 4, 60*sec)
	d.submit(0, "x", 0, 4, 60*sec)
	d.run(0)
	got := map[string]int{}
	for _, g := range d.rounds[0].d.Groups {
		got[g.Group] = g.Running
	}
	if got["default"] != 2 || got["x"] != 2 {
		t.Fatalf("groups = %v, want default=2 x=2", got)
	}
}

func TestSameInputSameDecisions(t *testing.T) {
	run := func() string {
		cfg := &fairshare.Config{ShareDecaySeconds: 300, ComputeReservation: 40,
			Shares: []fairshare.ShareWeight{{Share: "a", WeightFactor: wf(0.3)}, {Share: "b"}, {Share: "c", WeightFactor: wf(2)}}}
		d := newDriver(t, cfg, 7)
		d.submit(0, "a", 1, 20, 70*sec)
		d.submit(15*sec, "b", 0, 30, 40*sec)
		d.submit(100*sec, "c", 5, 25, 55*sec)
		d.submit(110*sec, "a", 9, 5, 20*sec)
		d.run(30 * minute)
		var b strings.Builder
		for _, r := range d.rounds {
			out, _ := json.Marshal(r.d)
			b.Write(out)
		}
		return b.String()
	}
	if first, second := run(), run(); first != second {
		t.Fatal("two runs of one scenario made different decisions")
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
