package admit

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestMaxCapacityByEndpointType(t *testing.T) {
	s := Defaults()
	cases := []struct {
		name string
		ep   model.Endpoint
		want []int // per variant
	}{
		// The seed's example: 3 instances with osml:instance-concurrency=5.
		{"instance-backed with its concurrency", model.Endpoint{Name: "e", Type: model.EndpointInstanceBacked, Instances: 3, InstanceConcurrency: 5}, []int{15}},
		{"instance-backed with the default concurrency", model.Endpoint{Name: "e", Type: model.EndpointInstanceBacked, Instances: 3}, []int{3 * DefaultInstanceConcurrency}},
		{"instance-backed scaled to zero", model.Endpoint{Name: "e", Type: model.EndpointInstanceBacked}, []int{0}},
		{"serverless is its max concurrency", model.Endpoint{Name: "e", Type: model.EndpointServerless, MaxConcurrency: 20}, []int{20}},
		{"http takes the default", model.Endpoint{Name: "e", Type: model.EndpointHTTP}, []int{DefaultHTTPEndpointConcurrency}},
		{"http with its own concurrency", model.Endpoint{Name: "e", Type: model.EndpointHTTP, MaxConcurrency: 3}, []int{3}},
		{"variants have their own capacity and inherit the endpoint's concurrency", model.Endpoint{Name: "e", Type: model.EndpointInstanceBacked, InstanceConcurrency: 4,
			Variants: []model.Variant{{Name: "a", Weight: 1, Instances: 2}, {Name: "b", Weight: 1, Instances: 2, InstanceConcurrency: 1}}}, []int{8, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, v := range Variants(tc.ep) {
				got = append(got, MaxCapacity(tc.ep, v, s))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("capacity %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("settings change the defaults", func(t *testing.T) {
		s := Defaults()
		s.DefaultInstanceConcurrency, s.DefaultHTTPEndpointConcurrency = 3, 7
		if got := MaxCapacity(model.Endpoint{Type: model.EndpointInstanceBacked}, model.Variant{Instances: 2}, s); got != 6 {
			t.Errorf("instance-backed = %d, want 6", got)
		}
		if got := MaxCapacity(model.Endpoint{Type: model.EndpointHTTP}, model.Variant{}, s); got != 7 {
			t.Errorf("http = %d, want 7", got)
		}
	})
}

func TestTargetCapacityIsFloorOfMaxTimesPercentage(t *testing.T) {
	cases := []struct {
		max  int
		pct  float64
		want int
	}{
		{100, 0.8, 80}, // the seed's example: 20 requests of headroom
		{100, 1.0, 100},
		{100, 1.2, 120},
		{15, 0.5, 7},    // 7.5 rounds down
		{100, 0.29, 29}, // 28.999999999999996 in floating point
		{3, 0.0, 0},
		{0, 1.5, 0},
	}
	for _, tc := range cases {
		if got := TargetCapacity(tc.max, tc.pct); got != tc.want {
			t.Errorf("TargetCapacity(%d, %g) = %d, want %d", tc.max, tc.pct, got, tc.want)
		}
	}
	if headroom := 100 - TargetCapacity(100, 0.8); headroom != 20 {
		t.Errorf("headroom = %d, want 20", headroom)
	}
}

func TestEstimateLoad(t *testing.T) {
	s := Defaults()
	cases := []struct {
		name   string
		job    model.Job
		load   int
		source string
	}{
		// The seed's example: 8 regions × 4 tile workers per instance.
		{"regions times tile workers", model.Job{Regions: 8}, 32, LoadRegions},
		{"explicit load wins", model.Job{Load: 5, Regions: 8}, 5, LoadExplicit},
		{"unknown region count is 20 regions", model.Job{}, 80, LoadDefault},
		// 30000 × 15000 with the default geometry (R 10240, T 1024, O 50):
		// R' = 974 × 10 + 50 = 9790, stride 9740: 4 × 2 regions.
		{"image cut into regions", model.Job{Image: model.ImageSize{Width: 30000, Height: 15000}, TileOverlap: DefaultTileOverlap}, 32, LoadImage},
		{"a small image is one region", model.Job{Image: model.ImageSize{Width: 500, Height: 500}, TileOverlap: 50}, 4, LoadImage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			load, source := Estimate(tc.job, s)
			if load != tc.load || source != tc.source {
				t.Errorf("Estimate = %d (%s), want %d (%s)", load, source, tc.load, tc.source)
			}
		})
	}
	s.TileWorkersPerInstance = 2
	if load, _ := Estimate(model.Job{Regions: 8}, s); load != 16 {
		t.Errorf("with 2 tile workers, 8 regions = %d, want 16", load)
	}
}

// cropWalk counts regions the way the seed's system cuts an image: region
// origins every R' − O pixels from 0, a region kept when more than the
// overlap of it lies inside the image.
func cropWalk(width, height, r, tile, overlap int) int {
	r = (tile-overlap)*((r-overlap)/(tile-overlap)) + overlap
	stride := r - overlap
	count := func(d int) int {
		n := 0
		for x := 0; x < d; x += stride {
			if min(r, d-x) > overlap {
				n++
			}
		}
		return max(1, n)
	}
	return count(width) * count(height)
}

func TestRegionsMatchesACropWalk(t *testing.T) {
	for _, g := range []struct{ r, tile, overlap int }{{10240, 1024, 50}, {4096, 512, 0}, {2048, 512, 100}, {1000, 300, 30}} {
		for w := 1; w <= 30000; w += 997 {
			for _, h := range []int{1, g.overlap, g.overlap + 1, g.r, g.r + 1, 3*g.r - 2*g.overlap, 25000} {
				if h < 1 {
					continue
				}
				if got, want := Regions(w, h, g.r, g.tile, g.overlap), cropWalk(w, h, g.r, g.tile, g.overlap); got != want {
					t.Fatalf("Regions(%d, %d, R %d, T %d, O %d) = %d, crop walk gives %d", w, h, g.r, g.tile, g.overlap, got, want)
				}
			}
		}
	}
}

func TestConfigProblemsNameTheField(t *testing.T) {
	inst := func(name string, n int) model.Endpoint {
		return model.Endpoint{Name: name, Type: model.EndpointInstanceBacked, Instances: n}
	}
	withSettings := func(f func(*Settings)) Config {
		c := Config{Settings: Defaults()}
		f(&c.Settings)
		return c
	}
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"target above 1.5", withSettings(func(s *Settings) { s.CapacityTargetPercentage = 1.6 }), "throttling.capacityTargetPercentage"},
		{"target below 0", withSettings(func(s *Settings) { s.CapacityTargetPercentage = -0.1 }), "throttling.capacityTargetPercentage"},
		{"negative default concurrency", withSettings(func(s *Settings) { s.DefaultInstanceConcurrency = -1 }), "throttling.defaultInstanceConcurrency"},
		{"negative http concurrency", withSettings(func(s *Settings) { s.DefaultHTTPEndpointConcurrency = -1 }), "throttling.defaultHttpEndpointConcurrency"},
		{"negative tile workers", withSettings(func(s *Settings) { s.TileWorkersPerInstance = -4 }), "throttling.tileWorkersPerInstance"},
		{"negative starvation wait", withSettings(func(s *Settings) { s.StarvationWait = -time.Second }), "throttling.starvationWait"},
		{"negative instances", Config{Settings: Defaults(), Endpoints: []model.Endpoint{inst("a", -1)}}, "endpoints[0].instances"},
		{"negative instance concurrency", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointInstanceBacked, Instances: 1, InstanceConcurrency: -2}}}, "endpoints[0].instanceConcurrency"},
		{"negative max concurrency", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointHTTP, MaxConcurrency: -2}}}, "endpoints[0].maxConcurrency"},
		{"serverless without max concurrency", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointServerless}}}, "endpoints[0].maxConcurrency"},
		{"unknown type", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: "lambda"}}}, "endpoints[0].type"},
		{"duplicate endpoint", Config{Settings: Defaults(), Endpoints: []model.Endpoint{inst("a", 1), inst("a", 2)}}, "endpoints[1].name"},
		{"duplicate variant", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointInstanceBacked,
			Variants: []model.Variant{{Name: "v", Weight: 1}, {Name: "v", Weight: 1}}}}}, "endpoints[0].variants[1].name"},
		{"weights all zero", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointInstanceBacked,
			Variants: []model.Variant{{Name: "v1"}, {Name: "v2"}}}}}, "endpoints[0].variants"},
		{"negative weight", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointInstanceBacked,
			Variants: []model.Variant{{Name: "v1", Weight: -1}, {Name: "v2", Weight: 2}}}}}, "endpoints[0].variants[0].weight"},
		{"negative variant instances", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "a", Type: model.EndpointInstanceBacked,
			Variants: []model.Variant{{Name: "v1", Weight: 1, Instances: -3}}}}}, "endpoints[0].variants[0].instances"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.cfg.Problems()
			if len(ps) == 0 {
				t.Fatal("no problem found")
			}
			if ps[0].Path != tc.field {
				t.Errorf("problem %v, want one naming %s", ps, tc.field)
			}
			if _, err := New(tc.cfg, 1); err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("New: err = %v, want one naming %s", err, tc.field)
			}
		})
	}
	t.Run("the seed's bounds are valid", func(t *testing.T) {
		for _, pct := range []float64{0, 1.0, 1.5} {
			if ps := withSettings(func(s *Settings) { s.CapacityTargetPercentage = pct }).Problems(); len(ps) > 0 {
				t.Errorf("target %g: %v", pct, ps)
			}
		}
	})
}

// ---- controller helpers ---------------------------------------------------

type ctlT struct {
	t   *testing.T
	c   *Controller
	seq uint64
}

func newCtl(t *testing.T, s Settings, eps ...model.Endpoint) *ctlT {
	t.Helper()
	c, err := New(Config{Settings: s, Endpoints: eps}, 42)
	if err != nil {
		t.Fatal(err)
	}
	return &ctlT{t: t, c: c}
}

func (x *ctlT) submit(id, endpoint, variant string, load int, at time.Time) *Job {
	x.t.Helper()
	j := model.Job{ID: id, Endpoint: endpoint, Variant: variant, Load: load}
	if err := x.c.Check(j); err != nil {
		x.t.Fatalf("check %s: %v", id, err)
	}
	x.seq++
	return x.c.Enqueue(j, x.seq, at)
}

func ids(js []*Job) []string {
	out := []string{}
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

func (x *ctlT) pass(at time.Time) (admitted, throttled []string) {
	a, th := x.c.Pass(at)
	return ids(a), ids(th)
}

func variantStats(t *testing.T, c *Controller, endpoint, variant string) VariantStats {
	t.Helper()
	for _, es := range c.Stats() {
		if es.Endpoint != endpoint {
			continue
		}
		for _, vs := range es.Variants {
			if vs.Variant == variant {
				return vs
			}
		}
	}
	t.Fatalf("no stats for %s/%s", endpoint, variant)
	return VariantStats{}
}

func inst(name string, instances, conc int) model.Endpoint {
	return model.Endpoint{Name: name, Type: model.EndpointInstanceBacked, Instances: instances, InstanceConcurrency: conc}
}

func TestThrottlingCases(t *testing.T) {
	// det: 3 instances × 5 = 15 concurrent requests, target 15.
	t.Run("case 1: sufficient capacity starts the job", func(t *testing.T) {
		x := newCtl(t, Defaults(), inst("det", 3, 5))
		x.submit("a", "det", "", 10, t0)
		x.submit("b", "det", "", 5, t0)
		admitted, throttled := x.pass(t0)
		if fmt.Sprint(admitted) != "[a b]" || len(throttled) != 0 {
			t.Fatalf("admitted %v throttled %v, want both admitted (10 + 5 = 15 fits)", admitted, throttled)
		}
		if vs := variantStats(t, x.c, "det", ""); vs.Load != 15 || vs.Available != 0 || vs.Utilization != 100 {
			t.Errorf("stats %+v", vs)
		}
	})
	t.Run("case 2: insufficient capacity with others running evaluates the next job", func(t *testing.T) {
		x := newCtl(t, Defaults(), inst("det", 3, 5))
		x.submit("a", "det", "", 10, t0)
		x.submit("big", "det", "", 8, t0)   // 8 > 15 − 10
		x.submit("small", "det", "", 5, t0) // the next eligible job fits
		admitted, throttled := x.pass(t0)
		if fmt.Sprint(admitted) != "[a small]" || fmt.Sprint(throttled) != "[big]" {
			t.Fatalf("admitted %v throttled %v, want [a small] and [big]", admitted, throttled)
		}
		r, ok := x.c.Reason("big")
		want := `endpoint "det": available 0 of target 15, job load 8 (2 jobs running)`
		if !ok || r.Code != model.ReasonThrottled || r.Message != want {
			t.Errorf("reason %+v, want %q", r, want)
		}
		// Throttled again on the next pass, but counted once.
		if a, th := x.pass(t0.Add(time.Second)); len(a) != 0 || len(th) != 0 {
			t.Errorf("second pass admitted %v, newly throttled %v", a, th)
		}
		if vs := variantStats(t, x.c, "det", ""); vs.Throttles != 1 || vs.Visible != 1 || vs.Buffered != 3 || vs.RunningJobs != 2 {
			t.Errorf("stats %+v", vs)
		}
		x.c.Release("a")
		if a, _ := x.pass(t0.Add(2 * time.Second)); fmt.Sprint(a) != "[big]" {
			t.Errorf("after a ended: admitted %v, want [big]", a)
		}
	})
	t.Run("case 3: insufficient capacity with none running starts the job", func(t *testing.T) {
		x := newCtl(t, Defaults(), inst("det", 3, 5))
		x.submit("huge", "det", "", 40, t0)
		x.submit("next", "det", "", 1, t0)
		admitted, throttled := x.pass(t0)
		if fmt.Sprint(admitted) != "[huge]" || fmt.Sprint(throttled) != "[next]" {
			t.Fatalf("admitted %v throttled %v, want the huge job alone", admitted, throttled)
		}
		if j, _ := x.c.Job("huge"); !j.Exception {
			t.Error("huge was not marked as a single-job exception")
		}
		vs := variantStats(t, x.c, "det", "")
		if vs.SingleJobExceptions != 1 || vs.Load != 40 || vs.Available != -25 || math.Abs(vs.Utilization-100*40/15.0) > 1e-9 {
			t.Errorf("stats %+v", vs)
		}
	})
	t.Run("throttling off admits everything", func(t *testing.T) {
		s := Defaults()
		s.Enabled = false
		x := newCtl(t, s, inst("det", 3, 5))
		x.submit("a", "det", "", 10, t0)
		x.submit("b", "det", "", 10, t0)
		if admitted, _ := x.pass(t0); len(admitted) != 2 {
			t.Fatalf("admitted %v", admitted)
		}
		if vs := variantStats(t, x.c, "det", ""); vs.Load != 20 || vs.Throttles != 0 {
			t.Errorf("stats %+v", vs)
		}
	})
	t.Run("the target percentage leaves headroom", func(t *testing.T) {
		s := Defaults()
		s.CapacityTargetPercentage = 0.8
		x := newCtl(t, s, model.Endpoint{Name: "sls", Type: model.EndpointServerless, MaxConcurrency: 100})
		for i := range 3 {
			x.submit(fmt.Sprint("j", i), "sls", "", 30, t0)
		}
		admitted, throttled := x.pass(t0)
		if fmt.Sprint(admitted) != "[j0 j1]" || fmt.Sprint(throttled) != "[j2]" {
			t.Fatalf("admitted %v throttled %v: 60 of target 80 leaves 20 < 30", admitted, throttled)
		}
		if vs := variantStats(t, x.c, "sls", ""); vs.TargetCapacity != 80 || vs.MaxCapacity != 100 || vs.Available != 20 {
			t.Errorf("stats %+v", vs)
		}
	})
}

func abEndpoint(wa, wb float64) model.Endpoint {
	return model.Endpoint{Name: "ab", Type: model.EndpointInstanceBacked, Variants: []model.Variant{
		{Name: "current", Weight: wa, Instances: 10}, {Name: "candidate", Weight: wb, Instances: 10}}}
}

func TestVariantSelectionFollowsWeights(t *testing.T) {
	const n = 10_000
	run := func(seed uint64) (string, int) {
		c, err := New(Config{Settings: Defaults(), Endpoints: []model.Endpoint{abEndpoint(70, 30)}}, seed)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		first := 0
		for i := range n {
			j := c.Enqueue(model.Job{ID: fmt.Sprint(i), Endpoint: "ab", Load: 1}, uint64(i+1), t0)
			if j.Variant == "current" {
				first++
			}
			b.WriteByte(j.Variant[1])
		}
		return b.String(), first
	}
	seq, first := run(7)
	// Binomial(10000, 0.7): σ = √(n p (1−p)) ≈ 45.8; 4σ bounds.
	sigma := math.Sqrt(n * 0.7 * 0.3)
	if lo, hi := n*0.7-4*sigma, n*0.7+4*sigma; float64(first) < lo || float64(first) > hi {
		t.Errorf("%d of %d jobs went to the 70%% variant, want within [%.0f, %.0f]", first, n, lo, hi)
	}
	if again, _ := run(7); again != seq {
		t.Error("the same seed selected different variants")
	}
	if other, _ := run(8); other == seq {
		t.Error("another seed selected exactly the same variants")
	}
}

func TestVariantSelectionHonoursTheJob(t *testing.T) {
	x := newCtl(t, Defaults(), abEndpoint(100, 0), inst("single", 1, 1),
		model.Endpoint{Name: "one", Type: model.EndpointHTTP, Variants: []model.Variant{{Name: "only", Weight: 0}}})
	for i := range 50 {
		if j := x.submit(fmt.Sprint("explicit", i), "ab", "candidate", 1, t0); j.Variant != "candidate" {
			t.Fatalf("explicit variant replaced by %q", j.Variant)
		}
		if j := x.submit(fmt.Sprint("weighted", i), "ab", "", 1, t0); j.Variant != "current" {
			t.Fatalf("a weight-0 variant was selected: %q", j.Variant)
		}
	}
	if j := x.submit("s", "single", "", 1, t0); j.Variant != "" {
		t.Errorf("endpoint without variants: variant %q", j.Variant)
	}
	if j := x.submit("o", "one", "", 1, t0); j.Variant != "only" {
		t.Errorf("single variant: %q", j.Variant)
	}
	if err := x.c.Check(model.Job{ID: "bad", Endpoint: "ab", Variant: "v9"}); err == nil || err.Path != "variant" ||
		!errors.Is(err, ErrUnknownVariant) || !strings.Contains(err.Error(), `unknown variant "v9"`) {
		t.Errorf("unknown variant: %v", err)
	}
	if err := x.c.Check(model.Job{ID: "bad", Endpoint: "nope"}); err == nil || err.Path != "endpoint" || !errors.Is(err, ErrUnknownEndpoint) {
		t.Errorf("unknown endpoint: %v", err)
	}
}

func TestCapacityIsPerVariant(t *testing.T) {
	ep := model.Endpoint{Name: "ab", Type: model.EndpointInstanceBacked, InstanceConcurrency: 2, Variants: []model.Variant{
		{Name: "big", Weight: 1, Instances: 5}, {Name: "small", Weight: 1, Instances: 1}}}
	x := newCtl(t, Defaults(), ep)
	x.submit("b1", "ab", "big", 6, t0)
	x.submit("s1", "ab", "small", 2, t0)
	x.submit("s2", "ab", "small", 2, t0) // small is full (target 2) though big has room
	x.submit("b2", "ab", "big", 4, t0)
	admitted, throttled := x.pass(t0)
	if fmt.Sprint(admitted) != "[b1 s1 b2]" || fmt.Sprint(throttled) != "[s2]" {
		t.Fatalf("admitted %v throttled %v", admitted, throttled)
	}
	r, _ := x.c.Reason("s2")
	if want := `endpoint "ab" variant "small": available 0 of target 2, job load 2 (1 job running)`; r.Message != want {
		t.Errorf("reason %q, want %q", r.Message, want)
	}
	es := x.c.Stats()[0]
	if es.MaxCapacity != 12 || es.Load != 12 || es.Variants[0].Load != 10 || es.Variants[1].Load != 2 {
		t.Errorf("stats %+v", es)
	}
}

func TestLoadBalancedSelectionTakesTheOldestJobOfTheLeastLoadedEndpoint(t *testing.T) {
	s := Defaults()
	s.AdmissionsPerCycle = 1 // one start per pass, as the seed's scheduler
	x := newCtl(t, s, inst("busy", 10, 1), inst("idle", 10, 1))
	x.submit("running", "busy", "", 5, t0)
	if a, _ := x.pass(t0); fmt.Sprint(a) != "[running]" {
		t.Fatalf("setup admitted %v", a)
	}
	x.submit("old-busy", "busy", "", 1, t0.Add(time.Second))
	x.submit("old-idle", "idle", "", 1, t0.Add(2*time.Second))
	x.submit("new-idle", "idle", "", 1, t0.Add(3*time.Second))
	var order []string
	for i := range 3 {
		a, _ := x.pass(t0.Add(time.Duration(10+i) * time.Second))
		order = append(order, a...)
	}
	// idle (load 0) goes first with its oldest job; then idle has 1/10 and
	// busy 5/10, so idle's next job; then busy.
	if fmt.Sprint(order) != "[old-idle new-idle old-busy]" {
		t.Errorf("admission order %v", order)
	}
	if r, _ := x.c.Reason("new-idle"); r.Code != "" {
		t.Errorf("admitted job has a reason %+v", r)
	}
}

func TestStarvingJobReservesTheVariant(t *testing.T) {
	s := Defaults()
	s.StarvationWait = 5 * time.Minute
	x := newCtl(t, s, inst("det", 10, 1)) // target 10
	x.submit("r1", "det", "", 6, t0)
	x.pass(t0)
	x.submit("big", "det", "", 8, t0.Add(time.Second))
	// A stream of small jobs keeps jumping ahead of big while r1 runs.
	at := t0.Add(time.Second)
	var smallAdmitted int
	for i := range 20 {
		at = at.Add(30 * time.Second)
		x.submit(fmt.Sprint("s", i), "det", "", 2, at)
		a, _ := x.pass(at)
		for _, id := range a {
			if id == "big" {
				t.Fatalf("big admitted at pass %d while r1 runs", i)
			}
			smallAdmitted++
			x.c.Release(id) // small jobs end quickly
		}
	}
	if smallAdmitted == 0 {
		t.Fatal("no small job jumped ahead: the test shows nothing")
	}
	vs := variantStats(t, x.c, "det", "")
	if vs.ReservedFor != "big" || vs.Reservations != 1 {
		t.Fatalf("after 10m of starvation: %+v", vs)
	}
	r, _ := x.c.Reason(fmt.Sprint("s", 19))
	if r.Code != model.ReasonThrottled || !strings.Contains(r.Message, `capacity reserved for job "big" (load 8)`) {
		t.Errorf("small job's reason %q", r.Message)
	}
	// Small jobs no longer pass; when r1 ends, big goes first.
	x.c.Release("r1")
	a, _ := x.pass(at.Add(time.Second))
	if len(a) == 0 || a[0] != "big" {
		t.Fatalf("after r1 ended: admitted %v, want big first", a)
	}
	if vs := variantStats(t, x.c, "det", ""); vs.ReservedFor != "" {
		t.Errorf("reservation kept after admission: %+v", vs)
	}

	t.Run("disabled, small jobs keep jumping ahead", func(t *testing.T) {
		s := Defaults()
		s.StarvationWait = 0
		x := newCtl(t, s, inst("det", 10, 1))
		x.submit("r1", "det", "", 6, t0)
		x.pass(t0)
		x.submit("big", "det", "", 8, t0)
		for i := range 40 {
			at := t0.Add(time.Duration(i+1) * time.Minute)
			x.submit(fmt.Sprint("s", i), "det", "", 2, at)
			for _, id := range ids(first(x.c.Pass(at))) {
				if id == "big" {
					t.Fatal("big admitted while r1 runs")
				}
				x.c.Release(id)
			}
		}
		if vs := variantStats(t, x.c, "det", ""); vs.Reservations != 0 || vs.Admitted != 41 {
			t.Errorf("stats %+v", vs)
		}
	})
}

func first(a, _ []*Job) []*Job { return a }

func TestEndpointChangesAtRunTime(t *testing.T) {
	x := newCtl(t, Defaults(), inst("det", 1, 2)) // target 2
	x.submit("a", "det", "", 2, t0)
	x.submit("b", "det", "", 2, t0)
	if a, _ := x.pass(t0); fmt.Sprint(a) != "[a]" {
		t.Fatalf("admitted %v", a)
	}
	// An autoscaler adds two instances: b fits now.
	if err := x.c.SetEndpoint(inst("det", 3, 2)); err != nil {
		t.Fatal(err)
	}
	if a, _ := x.pass(t0.Add(time.Second)); fmt.Sprint(a) != "[b]" {
		t.Fatalf("after scaling out: admitted %v", a)
	}
	if es := x.c.Stats()[0]; es.MaxCapacity != 6 || es.Load != 4 {
		t.Errorf("stats %+v", es)
	}
	if err := x.c.SetEndpoint(model.Endpoint{Name: "det", Type: model.EndpointInstanceBacked, Instances: -1}); err == nil || !strings.Contains(err.Error(), "instances") {
		t.Errorf("negative instances accepted: %v", err)
	}
	// Removed: new jobs are refused, running ones keep their load on a
	// capacity of 0 until they end.
	if err := x.c.RemoveEndpoint("det"); err != nil {
		t.Fatal(err)
	}
	if err := x.c.Check(model.Job{Endpoint: "det"}); err == nil {
		t.Error("a removed endpoint accepted a job")
	}
	es := x.c.Stats()
	if len(es) != 1 || es[0].Configured || es[0].MaxCapacity != 0 || es[0].Load != 4 {
		t.Fatalf("stats after removal %+v", es)
	}
	x.c.Release("a")
	x.c.Release("b")
	if es := x.c.Stats(); len(es) != 0 {
		t.Errorf("removed endpoint kept after its jobs ended: %+v", es)
	}
	if err := x.c.RemoveEndpoint("det"); err == nil {
		t.Error("removed twice")
	}
}

func TestRemovedVariantRunsOneJobAtATime(t *testing.T) {
	x := newCtl(t, Defaults(), abEndpoint(1, 1))
	x.submit("a", "ab", "candidate", 1, t0)
	x.submit("b", "ab", "candidate", 1, t0)
	x.submit("c", "ab", "candidate", 1, t0)
	if a, _ := x.pass(t0); len(a) != 3 {
		t.Fatalf("admitted %v", a)
	}
	x.submit("d", "ab", "candidate", 1, t0)
	x.submit("e", "ab", "candidate", 1, t0)
	if err := x.c.SetEndpoint(model.Endpoint{Name: "ab", Type: model.EndpointInstanceBacked, Variants: []model.Variant{{Name: "current", Weight: 1, Instances: 10}}}); err != nil {
		t.Fatal(err)
	}
	if a, _ := x.pass(t0); len(a) != 0 {
		t.Fatalf("admitted %v on a removed variant with jobs running", a)
	}
	r, _ := x.c.Reason("d")
	if want := `endpoint "ab" variant "candidate" (not configured: capacity 0): available 0 of target 0, job load 1 (3 jobs running)`; r.Message != want {
		t.Errorf("reason %q, want %q", r.Message, want)
	}
	for _, id := range []string{"a", "b", "c"} {
		x.c.Release(id)
	}
	if a, _ := x.pass(t0); fmt.Sprint(a) != "[d]" {
		t.Errorf("admitted %v, want d alone (single-job exception)", a)
	}
}

func TestMetricsCountDecisions(t *testing.T) {
	x := newCtl(t, Defaults(), inst("det", 2, 2)) // target 4
	x.submit("a", "det", "", 4, t0)
	for i := range 5 {
		x.submit(fmt.Sprint("w", i), "det", "", 1, t0)
	}
	x.pass(t0) // a admitted, 5 throttled: 6 decisions
	x.pass(t0) // 5 decisions
	if !x.c.RecordError("det", "") {
		t.Fatal("error not recorded")
	}
	x.c.RecordDeadLetter(model.Job{ID: "dl", Endpoint: "det"})
	es := x.c.Stats()[0]
	vs := es.Variants[0]
	want := VariantStats{Variant: "", Weight: 1, Configured: true, MaxCapacity: 4, TargetCapacity: 4, Load: 4, Available: 0,
		Utilization: 100, RunningJobs: 1, Visible: 5, Buffered: 6, Submitted: 6, Admitted: 1, Throttles: 5, Invocations: 11, Errors: 2}
	if vs != want {
		t.Errorf("variant stats\n got %+v\nwant %+v", vs, want)
	}
	if es.Errors != 2 || es.DeadLetters != 1 || es.Utilization != 100 || es.Visible != 5 {
		t.Errorf("endpoint stats %+v", es)
	}
}

func TestSettingsAndEndpointsBeyondTheirBoundsAreProblems(t *testing.T) {
	many := make([]model.Endpoint, MaxEndpoints+1)
	for i := range many {
		many[i] = model.Endpoint{Name: fmt.Sprintf("e%d", i), Type: model.EndpointHTTP}
	}
	variants := make([]model.Variant, MaxVariants+1)
	for i := range variants {
		variants[i] = model.Variant{Name: fmt.Sprintf("v%d", i), Weight: 1}
	}
	for _, tt := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"too many endpoints", Config{Settings: Defaults(), Endpoints: many}, "endpoints"},
		{"too many variants", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "e", Type: model.EndpointHTTP, Variants: variants}}}, "endpoints[0].variants"},
		{"a capacity past the maximum", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "e", Type: model.EndpointServerless, MaxConcurrency: MaxConcurrency + 1}}}, "endpoints[0].maxConcurrency"},
		{"a weight past the maximum", Config{Settings: Defaults(), Endpoints: []model.Endpoint{{Name: "e", Type: model.EndpointHTTP,
			Variants: []model.Variant{{Name: "a", Weight: MaxWeight * 2}}}}}, "endpoints[0].variants[0].weight"},
		{"a default concurrency past the maximum", Config{Settings: Settings{DefaultInstanceConcurrency: MaxConcurrency + 1}}, "throttling.defaultInstanceConcurrency"},
		{"admissions per cycle past the maximum", Config{Settings: Settings{AdmissionsPerCycle: 1 << 62}}, "throttling.admissionsPerCycle"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range tt.cfg.Problems() {
				if p.Path == tt.field {
					return
				}
			}
			t.Errorf("no problem names %s: %v", tt.field, tt.cfg.Problems())
		})
	}
}
