package scenario

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

// TestEndpointsThrottlingExample runs `allot plan` on
// examples/endpoints-throttling.yaml and checks what its comments promise:
// the seed's figures and each case of the capacity check.
func TestEndpointsThrottlingExample(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "examples", "endpoints-throttling.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	d := e.Cycle(s.Start)
	if got := strings.Join(d.Admitted, " "); got != "det-huge geo-a sls-a geo-c" {
		t.Errorf("admitted %s", got)
	}
	var throttled []string
	for _, th := range d.Throttled {
		throttled = append(throttled, th.Job)
	}
	if got := strings.Join(throttled, " "); got != "geo-b sls-b det-small" {
		t.Errorf("throttled %s", got)
	}
	if got := strings.Join(d.DeadLettered, " "); got != "bad-input" {
		t.Errorf("dead-lettered %s", got)
	}
	caps := map[string][2]int{}
	for _, es := range e.EndpointStats() {
		caps[es.Endpoint] = [2]int{es.MaxCapacity, es.TargetCapacity}
	}
	// 3 × 5 = 15 (target 12); 100 × 0.8 = 80, 20 of headroom; http 10 (8).
	if caps["det"] != [2]int{15, 12} || caps["sls"] != [2]int{100, 80} || caps["geo"] != [2]int{10, 8} {
		t.Errorf("capacities %v", caps)
	}
	loads := map[string]int{}
	for _, id := range []string{"sls-running", "sls-a", "sls-b", "det-huge", "det-small"} {
		info, ok := e.Admission(id)
		if !ok {
			t.Fatalf("no admission record for %s", id)
		}
		loads[id] = info.Load
	}
	// 12 regions × 4; 8 regions × 4 = 32, given or computed from the
	// image; 20 regions × 4 when the size is unknown.
	want := map[string]int{"sls-running": 48, "sls-a": 32, "sls-b": 32, "det-huge": 80, "det-small": 2}
	for id, l := range want {
		if loads[id] != l {
			t.Errorf("load of %s = %d, want %d", id, loads[id], l)
		}
	}
	if info, _ := e.Admission("det-huge"); !info.Exception {
		t.Error("det-huge was not admitted by the single-job exception")
	}
	reasons := map[string]model.Reason{}
	for _, p := range d.Pending {
		reasons[p.Job] = p.Reason
	}
	if r := reasons["sls-b"]; r.Code != model.ReasonThrottled || r.Message != `endpoint "sls": available 0 of target 80, job load 32 (2 jobs running)` {
		t.Errorf("sls-b pending %+v", r)
	}
	dl := e.DeadLetters()
	if len(dl) != 1 || !strings.Contains(dl[0].Reason.Message, "corrupted file") {
		t.Errorf("dead letters %+v", dl)
	}
}

func TestEndpointsVariantsExampleHonoursTheExplicitVariant(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "examples", "endpoints-variants.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := e.Admission("compare"); info.Variant != "candidate" {
		t.Errorf("compare went to %q", info.Variant)
	}
}

func TestScenarioRejectsUnknownEndpointsNamingTheField(t *testing.T) {
	doc := `
endpoints:
  - {name: det, type: http, variants: [{name: v1}, {name: v2}]}
workers: [{name: w}]
jobs:
  - {id: a, endpoint: nope, tasks: [{name: t}]}
  - {id: b, endpoint: det, variant: v3, tasks: [{name: t}]}
throttling:
  capacityTargetPercentage: 2
`
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`line 6: jobs[0].endpoint: no endpoint "nope" is defined (known: det)`,
		`line 7: jobs[1].variant: endpoint "det" has no variant "v3" (known: v1, v2)`,
		`line 9: throttling.capacityTargetPercentage: must be between 0.0 and 1.5 (got 2)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
}

// A bad endpoint is reported once, on its own field: the jobs of the
// scenario are still checked against the queues the document defines, so
// they do not each report a queue problem they do not have.
func TestAnInvalidEndpointReportsOnlyItsOwnError(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"no queues: the default one", `
endpoints:
  - {name: det, type: serverless}
jobs:
  - {id: a, endpoint: det, tasks: [{name: t}]}
  - {id: b, tasks: [{name: t}]}
`, `line 3: endpoints[0].maxConcurrency: required for a serverless endpoint (its capacity, at least 1)`},
		{"one queue", `
queues: [{name: batch}]
endpoints:
  - {name: det, type: instance-backed, instances: -1}
jobs:
  - {id: a, endpoint: det, tasks: [{name: t}]}
`, `line 4: endpoints[0].instances: must not be negative (got -1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%v\nwant only:\n%s", err, tc.want)
			}
		})
	}
	// A job's real queue problems are still reported beside it.
	_, err := Parse([]byte(`
queues: [{name: a}, {name: b}]
endpoints: [{name: det, type: serverless}]
jobs: [{id: j, queue: c, tasks: [{name: t}]}]
`))
	if err == nil || !strings.Contains(err.Error(), `jobs[0].queue: no queue "c" is defined`) {
		t.Errorf("err = %v, want the job's unknown queue too", err)
	}
}

// maxConcurrency: 0 is no capacity at all, which SageMaker refuses (1 to
// 200): a written 0 is refused as such, not as "required".
func TestServerlessMaxConcurrencyZeroIsRefusedAsZero(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"written 0", `
endpoints: [{name: det, type: serverless, maxConcurrency: 0}]
`, `line 2: endpoints[0].maxConcurrency: must be at least 1 (got 0): the endpoint's capacity in concurrent requests (SageMaker serverless: 1 to 200); on an http endpoint, leave it out for throttling.defaultHttpEndpointConcurrency`},
		{"a variant's written 0", `
endpoints: [{name: det, type: serverless, variants: [{name: v, maxConcurrency: 0}]}]
`, `line 2: endpoints[0].variants[0].maxConcurrency: must be at least 1 (got 0)`},
		{"an http endpoint's written 0", `
endpoints: [{name: web, type: http, maxConcurrency: 0}]
`, `line 2: endpoints[0].maxConcurrency: must be at least 1 (got 0)`},
		{"left out", `
endpoints: [{name: det, type: serverless}]
`, `line 2: endpoints[0].maxConcurrency: required for a serverless endpoint (its capacity, at least 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
	s, err := Parse([]byte(`endpoints: [{name: det, type: serverless, maxConcurrency: 1}]`))
	if err != nil || len(s.Config.Admission.Endpoints) != 1 {
		t.Errorf("maxConcurrency 1: %v", err)
	}
}
