package classload

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// validConfig is the seed's five classes with one requestor rule each.
func validConfig() Config {
	return Config{
		Classes: []LoadClass{{Name: "c0", Percent: 30}, {Name: "c1", Percent: 25}, {Name: "c2", Percent: 20},
			{Name: "c3", Percent: 15}, {Name: "c4", Percent: 10}},
		RequestorMap: []RequestorRule{{Class: "c0", Pattern: "^c0-"}, {Class: "c1", Pattern: "^c1-"}},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // error prefix; "" for valid
	}{
		{"the seed's configuration is valid", func(*Config) {}, ""},
		{"percentages need not sum to 100", func(c *Config) { c.Classes[0].Percent = 90 }, ""},
		{"a 0% class is valid", func(c *Config) { c.Classes[4].Percent = 0 }, ""},
		{"no classes", func(c *Config) { c.Classes = nil; c.RequestorMap = nil },
			"classload.classes: at least one class"},
		{"percent above 100", func(c *Config) { c.Classes[1].Percent = 101 },
			"classload.classes[1].percent: must be between 0 and 100"},
		{"negative percent", func(c *Config) { c.Classes[2].Percent = -5 },
			"classload.classes[2].percent: must be between 0 and 100"},
		{"every percent 0", func(c *Config) {
			for i := range c.Classes {
				c.Classes[i].Percent = 0
			}
		}, "classload.classes: every percent is 0"},
		{"empty class name", func(c *Config) { c.Classes[3].Name = " " },
			"classload.classes[3].name: required"},
		{"duplicate class name", func(c *Config) { c.Classes[4].Name = "c1" },
			`classload.classes[4].name: class "c1" is already defined at classes[1]`},
		{"pattern that does not compile", func(c *Config) { c.RequestorMap[0].Pattern = "a(b" },
			"classload.requestorMap[0].pattern: does not compile: "},
		{"rule naming an unknown class", func(c *Config) { c.RequestorMap[1].Class = "gold" },
			`classload.requestorMap[1].class: unknown class "gold"`},
		{"negative threshold", func(c *Config) { c.RebalanceThreshold = -1 },
			"classload.rebalanceThreshold: must not be negative"},
		{"negative minimum duration", func(c *Config) { c.RebalanceMinimumDuration = -time.Second },
			"classload.rebalanceMinimumDuration: must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error starting %q", err, tc.want)
			}
		})
	}
}

func TestFactory(t *testing.T) {
	if _, err := policy.New(policy.Config{Kind: Name}); err == nil || !strings.HasPrefix(err.Error(), "classload:") {
		t.Errorf("no classload block: err = %v, want one naming classload", err)
	}
	bad := validConfig()
	bad.Classes[0].Percent = 200
	if _, err := policy.New(policy.Config{Kind: Name, Settings: &bad}); err == nil ||
		!strings.HasPrefix(err.Error(), "classload.classes[0].percent:") {
		t.Errorf("invalid block: err = %v, want the field path", err)
	}
	good := validConfig()
	p, err := policy.New(policy.Config{Kind: Name, Settings: &good})
	if err != nil || p.Name() != Name {
		t.Fatalf("New = %v, %v", p, err)
	}
	if _, ok := p.(policy.HistoryTaker); !ok {
		t.Error("classload does not take History, so a scenario cannot state the rebalance clock")
	}
	if jo, to := p.Order(); jo != policy.ByFewestRunning || to != policy.ByLongestFirst {
		t.Errorf("Order = %v, %v", jo, to)
	}
}

const configYAML = `
classes:
  - {name: gold, percent: 60}
  - {name: silver, percent: 40}
requestorMap:
  - {class: gold, pattern: "^prod-"}
rebalanceThreshold: 20
rebalanceMinimumDuration: 5m
`

func TestConfigDecoding(t *testing.T) {
	var fromYAML Config
	if err := yaml.Unmarshal([]byte(configYAML), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if fromYAML.RebalanceMinimumDuration != 5*time.Minute || fromYAML.RebalanceThreshold != 20 ||
		len(fromYAML.Classes) != 2 || fromYAML.Classes[1] != (LoadClass{Name: "silver", Percent: 40}) ||
		fromYAML.RequestorMap[0] != (RequestorRule{Class: "gold", Pattern: "^prod-"}) {
		t.Fatalf("YAML decoded to %+v", fromYAML)
	}

	b, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rebalanceMinimumDuration":"5m0s"`) || !strings.Contains(string(b), `"requestorMap"`) {
		t.Fatalf("JSON = %s, want the duration as a string and lowerCamel keys", b)
	}
	var fromJSON Config
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if fromJSON.RebalanceMinimumDuration != 5*time.Minute || fromJSON.Classes[0].Name != "gold" || fromJSON.RebalanceThreshold != 20 {
		t.Fatalf("JSON round trip = %+v", fromJSON)
	}
	// Through the policy block, as a config file or the API carries it.
	var cfg policy.Config
	if err := json.Unmarshal([]byte(`{"kind":"classload","classload":{"classes":[{"name":"a","percent":100}],"rebalanceMinimumDuration":"90s"}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if c, _ := cfg.Settings.(*Config); c == nil || c.RebalanceMinimumDuration != 90*time.Second {
		t.Fatalf("policy block decoded to %+v", cfg.Settings)
	}

	for bad, want := range map[string]string{
		`{"rebalanceMinimumDuration":300}`:         "classload.rebalanceMinimumDuration:",
		`{"rebalanceMinimumDuration":"5 minutes"}`: "classload.rebalanceMinimumDuration:",
		`{"rebalanceTreshold":20}`:                 `classload: json: unknown field "rebalanceTreshold"`,
	} {
		var c Config
		if err := json.Unmarshal([]byte(bad), &c); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: err = %v, want an error starting %q", bad, err, want)
		}
	}
}

func TestGroupOf(t *testing.T) {
	cfg := Config{
		Classes: []LoadClass{{Name: "prod", Percent: 50}, {Name: "batch", Percent: 25}, {Name: "adhoc", Percent: 25}},
		RequestorMap: []RequestorRule{
			{Class: "prod", Pattern: "^svc-"},
			{Class: "batch", Pattern: "^svc-nightly"}, // shadowed by the rule above
			{Class: "batch", Pattern: "etl"},
		},
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ requestor, want string }{
		{"svc-api", "prod"},
		{"svc-nightly", "prod"}, // first match wins
		{"team-etl-7", "batch"}, // unanchored
		{"alice", "adhoc"},      // unmatched: lowest percent, the later class on a tie
		{"", "adhoc"},
	}
	for _, tc := range tests {
		if got := p.GroupOf(&model.Job{Requestor: tc.requestor}); got != tc.want {
			t.Errorf("GroupOf(%q) = %q, want %q", tc.requestor, got, tc.want)
		}
	}
}

func TestRebalanceClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at     time.Duration
		spread int
		want   bool
	}
	tests := []struct {
		name      string
		threshold int
		minimum   time.Duration
		history   time.Duration
		steps     []step
	}{
		{"not due before the minimum duration, due once it has passed", 10, 5 * time.Minute, 0,
			[]step{{0, 30, false}, {4 * time.Minute, 30, false}, {5 * time.Minute, 30, true}}},
		{"the clock restarts after a rebalance", 10, 5 * time.Minute, 0,
			[]step{{0, 30, false}, {5 * time.Minute, 30, true}, {6 * time.Minute, 30, false}, {11 * time.Minute, 30, true}}},
		{"a spread back at the threshold resets the clock", 10, 5 * time.Minute, 0,
			[]step{{0, 30, false}, {3 * time.Minute, 10, false}, {4 * time.Minute, 30, false}, {8 * time.Minute, 30, false},
				{9 * time.Minute, 30, true}}},
		{"a zero minimum duration rebalances at once", 10, 0, 0, []step{{0, 11, true}}},
		{"threshold 0 disables rebalancing", 0, 0, time.Hour, []step{{0, 100, false}, {time.Hour, 200, false}}},
		{"history counts time already spent above the threshold", 10, 5 * time.Minute, 4 * time.Minute,
			[]step{{0, 30, false}, {time.Minute, 30, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c rebalanceClock
			c.restore(tc.history, t0)
			for _, s := range tc.steps {
				if got := c.due(s.spread, tc.threshold, tc.minimum, t0.Add(s.at)); got != s.want {
					t.Fatalf("at +%v spread %d: due = %v, want %v", s.at, s.spread, got, s.want)
				}
			}
		})
	}
}

func TestAllocatorHandsOutCountsRoundRobin(t *testing.T) {
	p, err := New(Config{Classes: []LoadClass{
		{Name: "a", Percent: 50}, {Name: "b", Percent: 30}, {Name: "c", Percent: 20}}})
	if err != nil {
		t.Fatal(err)
	}
	// View groups are sorted by key, as the engine builds them; class b has
	// nothing to do, so it is absent.
	v := &policy.View{Slots: 10, Free: 10, Groups: []policy.Group{
		{Key: "a", Waiting: 3, Usable: 3}, {Key: "c", Waiting: 9, Usable: 9}}}
	plan := p.Allocate(v)
	if len(plan.Targets) != 2 || plan.Targets[0] != 5 || plan.Targets[1] != 2 {
		t.Fatalf("targets = %v, want [5 2]", plan.Targets)
	}
	var got []string
	for {
		g, ok := plan.Alloc.Next()
		if !ok {
			break
		}
		got = append(got, v.Groups[g].Key)
		plan.Alloc.Started(g)
		if len(got) > 20 {
			t.Fatal("the allocator does not stop")
		}
	}
	// a: 3 (all it waits), c: 7 (2 entitled, 5 on loan); turns alternate.
	if want := "a c a c a c c c c c"; strings.Join(got, " ") != want {
		t.Fatalf("hand-out order = %v, want %s", got, want)
	}
	if _, ok := plan.Alloc.Why(0); ok {
		t.Error("class a started all it waits for, yet Why holds it back")
	}
}

func TestAllocatorExhaustedClassLeavesTheTurn(t *testing.T) {
	p, err := New(Config{Classes: []LoadClass{{Name: "a", Percent: 50}, {Name: "b", Percent: 50}}})
	if err != nil {
		t.Fatal(err)
	}
	v := &policy.View{Slots: 4, Free: 4, Groups: []policy.Group{{Key: "a", Waiting: 5, Usable: 5}, {Key: "b", Waiting: 5, Usable: 5}}}
	plan := p.Allocate(v)
	g, _ := plan.Alloc.Next()
	plan.Alloc.Exhausted(g)
	n := 0
	for {
		h, ok := plan.Alloc.Next()
		if !ok {
			break
		}
		if h == g {
			t.Fatalf("exhausted group %d handed out again", g)
		}
		plan.Alloc.Started(h)
		n++
	}
	if n != 2 {
		t.Fatalf("the other class got %d slots, want its 2", n)
	}
	if _, ok := plan.Alloc.Why(g); ok {
		t.Error("an exhausted class is a placement matter, yet Why claims it")
	}
}
