// The property test restarts a server a hundred times; it checks input
// handling, not concurrency, and the race detector would make it ten times
// slower in the suite's -race run.

//go:build !race

package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"pgregory.net/rapid"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// Values a submitter might send: ordinary ones, and ones picked to sit on
// and past every bound — quantities that overflow or are not numbers,
// fractions where whole numbers go, names that are path steps, strings past
// their limits. A field takes an odd value one time in six, so that most
// documents have one or none and many are accepted.
var (
	names      = []string{"a", "job-1", "A.b_c-9", "x", strings.Repeat("n", 128)}
	weirdNames = []string{".", "..", "-x", "_x", "a/b", "a b", "é", "%2e%2e", "", strings.Repeat("n", 129)}
	cpus       = []string{"1", "0.5", "500m", "0", "'2'", "1000000"}
	memories   = []string{"1", "512Mi", "16Gi", "1Pi", "0", "'2'"}
	weirdQuant = []string{"2Pi", "1e30", "'1e30'", "-1", ".nan", ".inf", "-.inf", "NaNGi", "9223372036854775807m",
		"99999999999999999999m", "1e30Ti", "-0", "~", "[1]"}
	wholes      = []string{"0", "1", "3", "100", "1000000", "-1000000", "0x10", "1_000", "3.0"}
	weirdWholes = []string{"2.7", "-1", "-1e308", "1e308", "1e30", "9223372036854775807", "9223372036854775808",
		"100001", "1000001", "'5'", "true", "[1]"}
	durations      = []string{"5m", "90", "1h30m", "0"}
	weirdDurations = []string{"1e30", "2562047h", "2562048h", "-1s", "1e-300", "soon"}
)

// pick draws an ordinary value, or one time in six an odd one.
func pick(t *rapid.T, label string, ordinary, odd []string) string {
	if rapid.IntRange(0, 5).Draw(t, label+"Odd") == 5 {
		return rapid.SampledFrom(odd).Draw(t, label)
	}
	return rapid.SampledFrom(ordinary).Draw(t, label)
}

// genText draws a string of a length around the limits, mostly short.
func genText(t *rapid.T, label string) string {
	n := pick(t, label+"Len", []string{"0", "1", "10"}, []string{"256", "257", "65537"})
	size := map[string]int{"0": 0, "1": 1, "10": 10, "256": spec.MaxValueLen, "257": spec.MaxValueLen + 1, "65537": spec.MaxArgBytes + 1}[n]
	return strings.Repeat(rapid.SampledFrom([]string{"x", "é", "\\t", "$"}).Draw(t, label+"Char"), size)
}

// genJobYAML draws a job document in YAML whose every field may be out of
// bounds.
func genJobYAML(t *rapid.T) string {
	var b strings.Builder
	if rapid.Bool().Draw(t, "hasID") {
		fmt.Fprintf(&b, "id: %q\n", pick(t, "id", names, weirdNames))
	}
	fmt.Fprintf(&b, "queue: %q\n", pick(t, "queue", []string{"batch", "gpu"}, []string{"", "nope", "..", strings.Repeat("q", 200)}))
	if rapid.Bool().Draw(t, "hasPriority") {
		fmt.Fprintf(&b, "priority: %s\n", pick(t, "priority", wholes, weirdWholes))
	}
	if rapid.Bool().Draw(t, "hasRequestor") {
		fmt.Fprintf(&b, "requestor: %q\n", genText(t, "requestor"))
	}
	if rapid.Bool().Draw(t, "hasLabels") {
		fmt.Fprintf(&b, "labels: {%q: %q}\n", pick(t, "labelKey", names, weirdNames), genText(t, "labelValue"))
	}
	n := rapid.IntRange(1, 4).Draw(t, "tasks")
	if rapid.IntRange(0, 19).Draw(t, "noTasks") == 19 {
		n = 0
	}
	b.WriteString("tasks:\n")
	if n == 0 {
		b.WriteString("  []\n")
	}
	taskNames := make([]string, n)
	for i := range n {
		taskNames[i] = pick(t, "taskName", names[:4], weirdNames) + fmt.Sprint(i)
		fmt.Fprintf(&b, "  - name: %q\n", taskNames[i])
		if rapid.Bool().Draw(t, "hasCount") {
			fmt.Fprintf(&b, "    count: %s\n", pick(t, "count", []string{"0", "1", "3", "1000"}, weirdWholes))
		}
		if rapid.Bool().Draw(t, "hasResources") {
			fmt.Fprintf(&b, "    resources: {cpu: %s, memory: %s, gpus: %s, gpuMemory: %s}\n",
				pick(t, "cpu", cpus, weirdQuant), pick(t, "memory", memories, weirdQuant),
				pick(t, "gpus", []string{"1", "2"}, weirdWholes), pick(t, "gpuMemory", memories, weirdQuant))
		}
		if rapid.Bool().Draw(t, "hasTimeout") {
			fmt.Fprintf(&b, "    timeout: %s\n", pick(t, "timeout", durations, weirdDurations))
		}
		if i > 0 && rapid.Bool().Draw(t, "hasNeeds") {
			fmt.Fprintf(&b, "    needs: [%q]\n", taskNames[rapid.IntRange(0, i-1).Draw(t, "need")])
		}
		if rapid.Bool().Draw(t, "command") {
			fmt.Fprintf(&b, "    command: [echo, %q]\n", genText(t, "arg"))
		} else {
			fmt.Fprintf(&b, "    run: %q\n", "echo "+genText(t, "script"))
		}
		if rapid.Bool().Draw(t, "hasEnv") {
			fmt.Fprintf(&b, "    env: {A: %q}\n", genText(t, "env"))
		}
	}
	return b.String()
}

// genJSONValue draws any JSON value, a few levels deep, with the keys of a
// job spec among its keys.
func genJSONValue(t *rapid.T, depth int) any {
	kinds := []string{"null", "bool", "number", "string"}
	if depth < 3 {
		kinds = append(kinds, "list", "object")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "kind") {
	case "bool":
		return rapid.Bool().Draw(t, "bool")
	case "number":
		return json.Number(rapid.SampledFrom([]string{"0", "2.7", "-1e308", "1e30", "9223372036854775808", "3"}).Draw(t, "number"))
	case "string":
		return rapid.SampledFrom(append(append([]string{}, weirdNames...), weirdQuant...)).Draw(t, "string")
	case "list":
		out := make([]any, rapid.IntRange(0, 3).Draw(t, "len"))
		for i := range out {
			out[i] = genJSONValue(t, depth+1)
		}
		return out
	case "object":
		out := map[string]any{}
		for range rapid.IntRange(0, 4).Draw(t, "len") {
			key := rapid.SampledFrom([]string{"id", "queue", "priority", "tasks", "name", "run", "count", "resources", "memory",
				"cpu", "needs", "labels", "bogus"}).Draw(t, "key")
			out[key] = genJSONValue(t, depth+1)
		}
		return out
	}
	return nil
}

// propertyServer is a controller on a store file, served by the API.
type propertyServer struct {
	t    *rapid.T
	path string
	st   *sqlite.Store
	h    http.Handler
	stop func()
}

func startPropertyServer(t *rapid.T, path string) *propertyServer {
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctrl, err := control.New(context.Background(), control.Config{
		Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}, {Name: "gpu"}}}, Logger: log}, st)
	if err != nil {
		st.Close()
		t.Fatalf("the server does not start on its store: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	return &propertyServer{t: t, path: path, st: st, h: New(ctrl, Options{Logger: log}).Handler(), stop: func() {
		cancel()
		<-done
		st.Close()
	}}
}

func (s *propertyServer) call(method, path, contentType, body string) (int, []byte) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// TestPropertyWhateverIsSubmittedTheServerRestarts: whatever a submitter
// sends — job documents whose fields sit on and past every bound, in YAML
// or JSON, random JSON, priority changes — each is refused with a 4xx or
// accepted; then a server started again on the same store starts, sets
// nothing aside, and every accepted job reads back as it was.
func TestPropertyWhateverIsSubmittedTheServerRestarts(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		path, err := os.MkdirTemp(dir, "run")
		if err != nil {
			rt.Fatal(err)
		}
		s := startPropertyServer(rt, filepath.Join(path, "allot.db"))
		accepted := map[string]string{} // job ID → state as accepted
		for range rapid.IntRange(1, 5).Draw(rt, "submissions") {
			var body, ct string
			switch rapid.IntRange(0, 3).Draw(rt, "form") {
			case 0, 1:
				body, ct = genJobYAML(rt), "application/yaml"
			case 2:
				raw, _ := json.Marshal(genJSONValue(rt, 0))
				body, ct = string(raw), "application/json"
			default: // the same documents in JSON, where JSON can say them (not NaN)
				body, ct = genJobYAML(rt), "application/yaml"
				var doc map[string]any
				if yaml.Unmarshal([]byte(body), &doc) == nil {
					if raw, err := json.Marshal(doc); err == nil {
						body, ct = string(raw), "application/json"
					}
				}
			}
			status, out := s.call("POST", "/v1/jobs", ct, body)
			switch {
			case status == http.StatusCreated:
				var j api.Job
				if err := json.Unmarshal(out, &j); err != nil {
					rt.Fatalf("201 without a job: %s", out)
				}
				accepted[j.ID] = j.State
				if rapid.Bool().Draw(rt, "changePriority") {
					p := pick(rt, "newPriority", wholes, weirdWholes)
					if st, out := s.call("POST", "/v1/jobs/"+j.ID+"/priority", "application/json", `{"priority": `+p+`}`); st >= 500 {
						rt.Fatalf("priority %s: %d %s", p, st, out)
					}
				}
			case status >= 400 && status < 500:
			default:
				rt.Fatalf("POST /v1/jobs %q: %d %s", body, status, out)
			}
		}
		s.stop()

		s = startPropertyServer(rt, s.path)
		defer s.stop()
		evs, err := s.st.Events(context.Background(), store.EventFilter{})
		if err != nil {
			rt.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == control.EventRowQuarantined {
				rt.Fatalf("an accepted row does not read back: %s", e.Message)
			}
		}
		for id := range accepted {
			status, out := s.call("GET", "/v1/jobs/"+id, "", "")
			var j api.Job
			if status != 200 || json.Unmarshal(out, &j) != nil || j.ID != id {
				rt.Fatalf("accepted job %q after a restart: %d %s", id, status, out)
			}
			for _, tk := range j.Tasks {
				if tk.Reason != nil && tk.Reason.Code == model.ReasonQuarantined {
					rt.Fatalf("accepted job %q was quarantined: %s", id, tk.Reason.Message)
				}
			}
		}
	})
}
