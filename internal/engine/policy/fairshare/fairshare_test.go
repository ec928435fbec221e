package fairshare

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func w(v float64) *float64 { return Weight(v) }

func mustNew(t *testing.T, cfg *Config) *Policy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateNamesTheField(t *testing.T) {
	two := func(second ShareWeight) []ShareWeight {
		return []ShareWeight{{Share: "green", WeightFactor: w(1)}, second}
	}
	cases := []struct {
		name string
		cfg  *Config
		want string // "" = valid
	}{
		{"nil config means defaults", nil, ""},
		{"zero config is valid", &Config{}, ""},
		{"omitted weight factor is 1", &Config{Shares: two(ShareWeight{Share: "blue"})}, ""},
		{"smallest weight factor", &Config{Shares: two(ShareWeight{Share: "blue", WeightFactor: w(0.0001)})}, ""},
		{"largest weight factor", &Config{Shares: two(ShareWeight{Share: "blue", WeightFactor: w(999.9999)})}, ""},
		{"zero weight factor", &Config{Shares: two(ShareWeight{Share: "blue", WeightFactor: w(0)})},
			"fairshare.shares[1].weightFactor: must be between 0.0001 and 999.9999"},
		{"weight factor too large", &Config{Shares: two(ShareWeight{Share: "blue", WeightFactor: w(1000)})},
			"fairshare.shares[1].weightFactor: must be between 0.0001 and 999.9999"},
		{"negative weight factor", &Config{Shares: two(ShareWeight{Share: "blue", WeightFactor: w(-1)})},
			"fairshare.shares[1].weightFactor: must be between 0.0001 and 999.9999"},
		{"NaN weight factor", &Config{Shares: two(ShareWeight{Share: "blue", WeightFactor: w(math.NaN())})},
			"fairshare.shares[1].weightFactor: must be between 0.0001 and 999.9999"},
		{"empty share name", &Config{Shares: two(ShareWeight{})}, "fairshare.shares[1].share: required"},
		{"duplicate share", &Config{Shares: two(ShareWeight{Share: "green"})},
			`fairshare.shares[1].share: share "green" is already named at shares[0]`},
		{"negative decay", &Config{ShareDecaySeconds: -1}, "fairshare.shareDecaySeconds: must not be negative"},
		{"reservation 99 is the maximum", &Config{ComputeReservation: 99}, ""},
		{"reservation 100", &Config{ComputeReservation: 100}, "fairshare.computeReservation: must be between 0 and 99"},
		{"negative reservation", &Config{ComputeReservation: -5}, "fairshare.computeReservation: must be between 0 and 99"},
		{"exponential model", &Config{ReservationModel: ReservationExponential}, ""},
		{"even model", &Config{ReservationModel: ReservationEven}, ""},
		{"unknown model", &Config{ReservationModel: "linear"}, `fairshare.reservationModel: unknown model "linear"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
				t.Fatalf("Validate() = %v, want %q", err, c.want)
			}
			// The registry reports the same error under the policy block.
			_, err = policy.New(policy.Config{Kind: Name, Settings: c.cfg})
			if c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
				t.Fatalf("policy.New() = %v, want prefix %q", err, c.want)
			}
			if c.want == "" && err != nil {
				t.Fatalf("policy.New() = %v", err)
			}
		})
	}
}

func TestGroupOfUsesShareOrDefault(t *testing.T) {
	p := mustNew(t, nil)
	if g := p.GroupOf(&model.Job{Share: "green"}); g != "green" {
		t.Fatalf("GroupOf(green) = %q", g)
	}
	if g := p.GroupOf(&model.Job{}); g != DefaultShare {
		t.Fatalf("GroupOf(no share) = %q, want %q", g, DefaultShare)
	}
	if jo, to := p.Order(); jo != policy.ByPriorityThenAge || to != policy.ByDeclaration {
		t.Fatalf("Order() = %v, %v", jo, to)
	}
}

// TestDecayIntegratesAccountCallsExactly checks the decayed usage against the
// closed form and checks that cutting an interval into many Account calls
// changes nothing.
func TestDecayIntegratesAccountCallsExactly(t *testing.T) {
	const tau = 600.0
	cfg := &Config{ShareDecaySeconds: int(tau)}
	one, many := mustNew(t, cfg), mustNew(t, cfg)
	// Both run 3 tasks from t0 to t0+900s, then 1 task until t0+1500s.
	one.Account("a", 3, t0)
	one.Account("a", -2, t0.Add(900*time.Second))
	many.Account("a", 3, t0)
	for s := 1; s < 900; s += 7 {
		many.Account("a", 0, t0.Add(time.Duration(s)*time.Second))
	}
	many.Account("a", -2, t0.Add(900*time.Second))
	at := t0.Add(1500 * time.Second)
	h1 := 3 * tau * (1 - math.Exp(-900/tau))
	want := h1*math.Exp(-600/tau) + 1*tau*(1-math.Exp(-600/tau))
	for name, p := range map[string]*Policy{"one call": one, "many calls": many} {
		got := p.History(at).Usage["a"]
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s: usage at 1500s = %.6f slot-seconds, want %.6f", name, got, want)
		}
	}
	// A steady share settles at r × τ, what a τ-second window would report.
	steady := mustNew(t, cfg)
	steady.Account("a", 4, t0)
	if got := steady.History(t0.Add(100 * time.Hour)).Usage["a"]; math.Abs(got-4*tau) > 1e-6 {
		t.Errorf("steady usage = %.3f, want %.3f", got, 4*tau)
	}
}

func TestHistoryIsIgnoredWithoutDecay(t *testing.T) {
	p := mustNew(t, nil)
	p.SetHistory(policy.History{Usage: map[string]float64{"red": 6000}}, t0)
	if h := p.History(t0); len(h.Usage) != 0 {
		t.Fatalf("History = %v, want empty: shareDecaySeconds 0 looks at current usage only", h.Usage)
	}
	for _, st := range p.Status(t0) {
		if st.Share == "red" && (st.SlotSeconds != 0 || st.Usage != 0) {
			t.Fatalf("red status = %+v, want no usage", st)
		}
	}
}

func TestHistoryAtZeroTimeCountsFromFirstEvent(t *testing.T) {
	p := mustNew(t, &Config{ShareDecaySeconds: 600})
	p.SetHistory(policy.History{Usage: map[string]float64{"red": 6000}}, time.Time{})
	// The first event stamps the history without decaying it over the
	// years since time zero.
	p.Account("red", 1, t0)
	if got := p.History(t0).Usage["red"]; got != 6000 {
		t.Fatalf("usage at t0 = %v, want 6000", got)
	}
}

func TestReserve(t *testing.T) {
	named := func(n int) []ShareWeight {
		out := []ShareWeight{}
		for _, s := range []string{"blue", "green", "red"}[:n] {
			out = append(out, ShareWeight{Share: s})
		}
		return out
	}
	cases := []struct {
		name    string
		cfg     Config
		slots   int
		active  []string
		wantCap int
	}{
		// The blog's figure 5: R=50 over two shares, only green active:
		// green may use 25% + 50% = 75% of the pool.
		{"50% two shares one active", Config{Shares: named(2), ComputeReservation: 50}, 8, []string{"green"}, 8 * 75 / 100},
		{"50% two shares both active", Config{Shares: named(2), ComputeReservation: 50}, 8, []string{"blue", "green"}, 8},
		// Figure 6: R=75 over three shares, one active: 50%.
		{"75% three shares one active", Config{Shares: named(3), ComputeReservation: 75}, 12, []string{"green"}, 12 * 50 / 100},
		{"75% three shares two active", Config{Shares: named(3), ComputeReservation: 75}, 12, []string{"blue", "green"}, 12 * 75 / 100},
		// Figure 7: R=99 over two shares: an even split.
		{"99% two shares one active", Config{Shares: named(2), ComputeReservation: 99}, 100, []string{"green"}, 100 / 2},
		{"99% two shares odd pool rounds the held slots up", Config{Shares: named(2), ComputeReservation: 99}, 9, []string{"green"}, 4},
		{"unnamed active share leaves all named shares reserved", Config{Shares: named(2), ComputeReservation: 50}, 8, []string{"default"}, 8 * 50 / 100},
		{"no reservation", Config{Shares: named(2)}, 8, []string{"green"}, 8},
		{"no named shares reserve nothing in the even model", Config{ComputeReservation: 50}, 8, []string{"green"}, 8},
		{"a small pool keeps one slot for the active shares", Config{Shares: named(2), ComputeReservation: 99}, 1, []string{"green"}, 1},
		// AWS documentation: (R/100)^active.
		{"exponential 50% one active", Config{ComputeReservation: 50, ReservationModel: ReservationExponential}, 8, []string{"green"}, 8 - 8/2},
		{"exponential 50% two active", Config{ComputeReservation: 50, ReservationModel: ReservationExponential}, 8, []string{"blue", "green"}, 8 - 8/4},
		{"exponential 50% three active", Config{ComputeReservation: 50, ReservationModel: ReservationExponential}, 8, []string{"a", "b", "c"}, 7},
		{"exponential 25% two active rounds held slots up", Config{ComputeReservation: 25, ReservationModel: ReservationExponential}, 100, []string{"a", "b"}, 100 - 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustNew(t, &c.cfg)
			if r := p.reserve(c.slots, c.active); r.cap != c.wantCap || r.held != c.slots-c.wantCap {
				t.Fatalf("reserve(%d, %v) = cap %d held %d, want cap %d", c.slots, c.active, r.cap, r.held, c.wantCap)
			}
		})
	}
}

// view builds a View with the given groups: key → running, waiting.
func view(slots int, groups ...policy.Group) *policy.View {
	free := slots
	for i := range groups {
		free -= groups[i].Running
		groups[i].Usable = groups[i].Waiting
	}
	return &policy.View{Now: t0, Queue: "q", Slots: slots, Free: free, Groups: groups}
}

// drain asks the allocator for up to free slots, as the engine does when
// every task fits, and returns the sequence of group keys served.
func drain(v *policy.View, plan policy.Plan) []string {
	var got []string
	waiting := make([]int, len(v.Groups))
	for i, g := range v.Groups {
		waiting[i] = g.Waiting
	}
	for free := v.Free; free > 0; {
		g, ok := plan.Alloc.Next()
		if !ok {
			break
		}
		if waiting[g] == 0 {
			plan.Alloc.Exhausted(g)
			continue
		}
		waiting[g]--
		free--
		got = append(got, v.Groups[g].Key)
		plan.Alloc.Started(g)
	}
	return got
}

func TestAllocatorServesLowestWeightedUsage(t *testing.T) {
	cases := []struct {
		name    string
		cfg     *Config
		slots   int
		groups  []policy.Group
		history map[string]float64
		want    string
	}{
		{"equal weights alternate, ties by share name", nil, 6,
			[]policy.Group{{Key: "a", Waiting: 10}, {Key: "b", Waiting: 10}}, nil, "a b a b a b"},
		{"factor 0.5 gets twice the slots of 1", &Config{Shares: []ShareWeight{{Share: "a", WeightFactor: w(0.5)}}}, 9,
			[]policy.Group{{Key: "a", Waiting: 10}, {Key: "b", Waiting: 10}}, nil, "a b a a b a a b a"},
		{"running tasks count as usage", nil, 6,
			[]policy.Group{{Key: "a", Running: 2, Waiting: 10}, {Key: "b", Waiting: 10}}, nil, "b b a b"},
		{"a share that cannot use more leaves the slots to others", nil, 5,
			[]policy.Group{{Key: "a", Waiting: 1}, {Key: "b", Waiting: 10}}, nil, "a b b b b"},
		{"decayed history counts as average slots over the window", &Config{ShareDecaySeconds: 600}, 6,
			[]policy.Group{{Key: "a", Waiting: 10}, {Key: "b", Waiting: 10}}, map[string]float64{"a": 3 * 600}, "b b b a b a"},
		{"history is ignored without decay", nil, 4,
			[]policy.Group{{Key: "a", Waiting: 10}, {Key: "b", Waiting: 10}}, map[string]float64{"a": 3 * 600}, "a b a b"},
		{"the reservation caps the active share", &Config{ComputeReservation: 50,
			Shares: []ShareWeight{{Share: "blue"}, {Share: "green"}}}, 8,
			[]policy.Group{{Key: "green", Running: 2, Waiting: 10}}, nil, "green green green green"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustNew(t, c.cfg)
			p.SetHistory(policy.History{Usage: c.history}, t0)
			v := view(c.slots, c.groups...)
			got := strings.Join(drain(v, p.Allocate(v)), " ")
			if got != c.want {
				t.Fatalf("served %q, want %q", got, c.want)
			}
		})
	}
}

func TestExhaustedShareIsNotServedAgain(t *testing.T) {
	p := mustNew(t, nil)
	v := view(4, policy.Group{Key: "a", Waiting: 3}, policy.Group{Key: "b", Waiting: 3})
	plan := p.Allocate(v)
	g, _ := plan.Alloc.Next()
	if v.Groups[g].Key != "a" {
		t.Fatalf("first = %q, want a", v.Groups[g].Key)
	}
	plan.Alloc.Exhausted(g)
	for i := 0; i < 3; i++ {
		g, ok := plan.Alloc.Next()
		if !ok || v.Groups[g].Key != "b" {
			t.Fatalf("after a is exhausted Next = %d %v, want b", g, ok)
		}
		plan.Alloc.Started(g)
	}
}

func TestTargetsSplitTheCapByInverseWeight(t *testing.T) {
	cases := []struct {
		name   string
		cfg    *Config
		slots  int
		groups []string
		want   []int
	}{
		{"equal weights, remainder to the first name", nil, 10, []string{"a", "b", "c"}, []int{4, 3, 3}},
		{"0.5 against 1", &Config{Shares: []ShareWeight{{Share: "a", WeightFactor: w(0.5)}}}, 9, []string{"a", "b"}, []int{6, 3}},
		{"remainder to the lower weight factor", &Config{Shares: []ShareWeight{{Share: "b", WeightFactor: w(0.5)}, {Share: "c", WeightFactor: w(0.5)}}},
			// exact: a 2, b 4, c 4 of 10; with 11: 2.2, 4.4, 4.4 → 2, 5, 4
			11, []string{"a", "b", "c"}, []int{2, 5, 4}},
		{"after the reservation", &Config{ComputeReservation: 50, Shares: []ShareWeight{{Share: "blue"}, {Share: "green"}}},
			8, []string{"green"}, []int{6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustNew(t, c.cfg)
			var gs []policy.Group
			for _, k := range c.groups {
				gs = append(gs, policy.Group{Key: k, Waiting: 100})
			}
			plan := p.Allocate(view(c.slots, gs...))
			sum := 0
			for i := range plan.Targets {
				if plan.Targets[i] != c.want[i] {
					t.Fatalf("targets = %v, want %v", plan.Targets, c.want)
				}
				sum += plan.Targets[i]
			}
			if c.cfg == nil || c.cfg.ComputeReservation == 0 {
				if sum != c.slots {
					t.Fatalf("targets add up to %d, want %d", sum, c.slots)
				}
			}
		})
	}
}

func TestWhyNamesTheReservedShares(t *testing.T) {
	p := mustNew(t, &Config{ComputeReservation: 50, Shares: []ShareWeight{{Share: "blue"}, {Share: "green"}}})
	v := view(8, policy.Group{Key: "green", Running: 6, Waiting: 4})
	plan := p.Allocate(v)
	if _, ok := plan.Alloc.Next(); ok {
		t.Fatal("Next handed out a slot above the reservation cap")
	}
	r, ok := plan.Alloc.Why(0)
	if !ok || r.Code != model.ReasonPolicyLimit {
		t.Fatalf("Why = %+v %v, want policy_limit", r, ok)
	}
	for _, want := range []string{"capacity reserved for shares without jobs: blue", "25%", "2 of 8 slots", "may run 6"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("Why message %q lacks %q", r.Message, want)
		}
	}
	// Below the cap the pool, not the policy, is what limits a share.
	v = view(8, policy.Group{Key: "green", Running: 2, Waiting: 4})
	plan = p.Allocate(v)
	if _, ok := plan.Alloc.Why(0); ok {
		t.Fatal("Why blamed the reservation below the cap")
	}
}

func TestStatusReportsUsageAndEntitlement(t *testing.T) {
	p := mustNew(t, &Config{ShareDecaySeconds: 600, ComputeReservation: 50,
		Shares: []ShareWeight{{Share: "blue", WeightFactor: w(0.5)}, {Share: "green"}, {Share: "red"}}})
	p.SetHistory(policy.History{Usage: map[string]float64{"red": 1200}}, t0)
	v := view(8, policy.Group{Key: "blue", Waiting: 5}, policy.Group{Key: "green", Waiting: 5})
	// The engine accounts each start.
	for _, k := range drain(v, p.Allocate(v)) {
		p.Account(k, 1, t0)
	}
	st := p.Status(t0)
	if len(st) != 3 || st[0].Share != "blue" || st[1].Share != "green" || st[2].Share != "red" {
		t.Fatalf("status = %+v, want blue, green, red", st)
	}
	// Red is idle: 50% over three named shares holds back 1/6 of the pool,
	// and blue (1/0.5 = 2) and green (1) split the rest 2:1.
	wantFrac := map[string]float64{"blue": (1 - 50.0/300) * 2 / 3, "green": (1 - 50.0/300) / 3, "red": 0}
	for _, s := range st {
		if math.Abs(s.EntitledFraction-wantFrac[s.Share]) > 1e-12 {
			t.Errorf("%s entitled %.4f, want %.4f", s.Share, s.EntitledFraction, wantFrac[s.Share])
		}
		if s.Usage != s.WeightFactor*(float64(s.Running)+s.SlotSeconds/600) {
			t.Errorf("%s usage %.4f is not w × (running + slotSeconds/τ)", s.Share, s.Usage)
		}
	}
	if st[0].Running+st[0].Waiting != 5 || st[1].Running+st[1].Waiting != 5 {
		t.Errorf("running+waiting = %d, %d, want 5 each", st[0].Running+st[0].Waiting, st[1].Running+st[1].Waiting)
	}
	if st[2].SlotSeconds != 1200 || !st[2].Named {
		t.Errorf("red = %+v, want its history and named", st[2])
	}
	// Status reads; it does not move the clock.
	if later := p.Status(t0.Add(600 * time.Second)); later[2].SlotSeconds >= 1200 {
		t.Errorf("red's usage did not decay: %v", later[2].SlotSeconds)
	}
	if again := p.Status(t0); again[2].SlotSeconds != 1200 {
		t.Errorf("Status changed the policy: %v", again[2].SlotSeconds)
	}
}

// BenchmarkAllocate hands out 10,000 free slots among 1,000 shares: a heap
// pop and fix per slot.
func BenchmarkAllocate(b *testing.B) {
	p, err := New(&Config{ShareDecaySeconds: 600, ComputeReservation: 10,
		Shares: []ShareWeight{{Share: "s0000", WeightFactor: w(0.5)}, {Share: "idle"}}})
	if err != nil {
		b.Fatal(err)
	}
	var gs []policy.Group
	for i := 0; i < 1000; i++ {
		gs = append(gs, policy.Group{Key: fmt.Sprintf("s%04d", i), Running: i % 7, Waiting: 50})
	}
	v := view(20000, gs...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := len(drain(v, p.Allocate(v))); got == 0 {
			b.Fatal("nothing allocated")
		}
	}
}
