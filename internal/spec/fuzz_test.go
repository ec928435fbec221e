package spec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// jobSeeds are job documents that exercise most of the format: counts,
// needs between groups, result references, commands, env, resources, JSON.
var jobSeeds = []string{
	"id: hello\ntasks: [{name: greet, run: echo hello}]\n",
	`id: dag
tasks:
  - name: prepare
    run: echo '{"rows": 1}' > "$ALLOT_RESULT_FILE"
  - name: shard
    count: 12
    needs: [prepare]
    command: [sh, -c, 'echo $ROWS', x, "${tasks.prepare.result.rows}"]
    env: {ROWS: "${tasks.prepare.result.rows}"}
    resources: {cpu: 500m, memory: 1Gi, gpus: 1, gpuMemory: 24Gi}
    maxAttempts: 3
    timeout: 5m
  - name: report
    needs: [shard]
    run: echo done
    workdir: out
`,
	`{"id": "j", "queue": "batch", "share": "team-a", "priority": 3, "urgent": true, "maxSlots": 2,
 "selector": {"kind": "gpu"}, "tasks": [{"name": "a", "count": 3, "run": "true"}, {"name": "b", "needs": ["a"], "run": "true"}]}`,
	"tasks:\n  - name: a\n    needs: [b]\n    run: x\n  - name: b\n    needs: [a]\n    run: y\n",
	"tasks:\n  - name: a\n    count: 100000\n    run: x\n  - name: b\n    count: 100\n    needs: [a]\n    run: y\n",
	"tasks: [{name: a, count: -1, run: x}, {name: a, run: y}, {name: '', run: z}]\n",
	"tasks: [{name: t, run: 'echo ${tasks.other.result.x}'}]\n",
	"tasks: [{name: t, resources: {cpu: 1e400, memory: 99999999999999999999Ti}, run: x}]\n",
	"a: &a [*a, *a]\ntasks: *a\n",
	"tasks: [{name: t, run: x, resources: {memory: 1e30, gpus: 1e30, gpuMemory: NaNGi}, count: 2.7}]\n",
	"priority: -1e308\nid: ..\ntasks: [{name: t, run: x, timeout: 1e300}]\n",
	`{"id":"a","tasks":[{"name":"x","count":"many"}]}`,
	`{"id":".","priority":1e400,"tasks":[{"name":"x","run":"y","resources":{"cpu":"9223372036854775807m"}}]}`,
	"tasks: [{name: t, command: [x, '${tasks.u.result.v}'], needs: [u]}, {name: u, run: y}]\nlabels: {a: b}\nselector: {k: v}\n",
	`{"queue":"qa","tasks":[{"name":"a","run":"x","count":2},{"name":"a-0","run":"y"}]}`,
	`{"queue":"qb","queue":"qa","tasks":[{"name":"t","name":"u","run":"x","env":{"A":"1","A":"2"}}]}`,
	"id: y-1\ntasks: [{name: t, run: x}]\n---\nid: y-2\n",
	`{"id":"a","tasks":[{"name":"t","run":"x"}]} {"id":"b"}]]]`,
	"tasks:\n  - &t {name: t0, run: x, env: &e {A: yyyy}}\n  - {<<: *t, name: t1, env: *e}\n",
}

// FuzzJobSpec feeds job documents through what a submission goes through
// before it reaches the engine: Decode, Expand, CheckRunnable. None may
// panic; a job they accept has at least one and at most MaxTasksPerJob
// tasks, unique task names, needs that name tasks of the job, at most
// MaxNeedEdges dependencies, and no dependency cycle.
func FuzzJobSpec(f *testing.F) {
	for _, s := range jobSeeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "jobs", "*.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j Job
		if _, err := Decode(data, &j); err != nil {
			checkFieldErrors(t, err)
			return
		}
		ex, err := j.Expand("", time.Unix(0, 0))
		if err != nil {
			checkFieldErrors(t, err)
			return
		}
		if err := j.CheckRunnable(""); err != nil {
			checkFieldErrors(t, err)
		} else {
			checkStoredForm(t, j, ex.Job)
		}
		tasks := ex.Job.Tasks
		if len(tasks) == 0 || len(tasks) > MaxTasksPerJob {
			t.Fatalf("accepted a job of %d tasks", len(tasks))
		}
		index := make(map[string]int, len(tasks))
		for i, tk := range tasks {
			if _, dup := index[tk.Name]; dup {
				t.Fatalf("two tasks named %q", tk.Name)
			}
			index[tk.Name] = i
		}
		// Kahn's algorithm: every task must come free if needs are acyclic.
		unmet := make([]int, len(tasks))
		children := make([][]int, len(tasks))
		edges := 0
		for i, tk := range tasks {
			for _, need := range tk.Needs {
				p, ok := index[need]
				if !ok {
					t.Fatalf("task %q needs %q, which is not in the job", tk.Name, need)
				}
				children[p] = append(children[p], i)
				unmet[i]++
				if edges++; edges > MaxNeedEdges {
					t.Fatalf("accepted a job with more than %d dependencies", MaxNeedEdges)
				}
			}
		}
		var free []int
		for i := range tasks {
			if unmet[i] == 0 {
				free = append(free, i)
			}
		}
		done := 0
		for len(free) > 0 {
			i := free[len(free)-1]
			free = free[:len(free)-1]
			done++
			for _, c := range children[i] {
				if unmet[c]--; unmet[c] == 0 {
					free = append(free, c)
				}
			}
		}
		if done != len(tasks) {
			t.Fatalf("accepted a job with a dependency cycle among %d of its tasks", len(tasks)-done)
		}
	})
}

// checkStoredForm checks what a server does with a job it accepted: it
// stores the spec as JSON and, at every start, reads it back and expands
// it again. That must give the same tasks, with quantities in their
// bounds; a stored job that does not read back would stop the server.
func checkStoredForm(t *testing.T, j Job, want model.Job) {
	t.Helper()
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatalf("an accepted job does not marshal: %v", err)
	}
	var back Job
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("an accepted job's stored form %.300s does not read back: %v", raw, err)
	}
	ex, err := back.Expand("", time.Unix(0, 0))
	if err != nil {
		t.Fatalf("an accepted job's stored form %.300s does not expand: %v", raw, err)
	}
	if len(ex.Job.Tasks) != len(want.Tasks) || ex.Job.Priority != want.Priority || ex.Job.ID != want.ID {
		t.Fatalf("the stored form expands to %d tasks (priority %d, id %q), want %d (%d, %q)",
			len(ex.Job.Tasks), ex.Job.Priority, ex.Job.ID, len(want.Tasks), want.Priority, want.ID)
	}
	for i, tk := range ex.Job.Tasks {
		r := tk.Resources
		if tk.Name != want.Tasks[i].Name || r != want.Tasks[i].Resources {
			t.Fatalf("task %d reads back as %s %+v, want %s %+v", i, tk.Name, r, want.Tasks[i].Name, want.Tasks[i].Resources)
		}
		if r.MilliCPU < 0 || r.MilliCPU > int64(MaxCPU) || r.MemoryMB < 0 || r.MemoryMB > int64(MaxMemory) ||
			r.GPUs < 0 || r.GPUs > MaxGPUs || r.GPUMemoryMB < 0 || r.GPUMemoryMB > int64(MaxMemory) {
			t.Fatalf("task %s accepted with resources %+v", tk.Name, r)
		}
	}
}

// checkFieldErrors checks that a refusal is the kind the API turns into a
// 400 with a message: field errors, each saying something.
func checkFieldErrors(t *testing.T, err error) {
	t.Helper()
	var list Errors
	var fe *FieldError
	switch {
	case errors.As(err, &list):
		if len(list) == 0 {
			t.Fatalf("an empty error list: %v", err)
		}
		for _, e := range list {
			if strings.TrimSpace(e.Msg) == "" {
				t.Fatalf("a field error without a message: %+v", e)
			}
		}
	case errors.As(err, &fe):
		if strings.TrimSpace(fe.Msg) == "" {
			t.Fatalf("a field error without a message: %+v", fe)
		}
	default:
		t.Fatalf("%T is not a field error: %v", err, err)
	}
}

func TestExpandBoundsDependencyEdges(t *testing.T) {
	for _, tt := range []struct {
		name      string
		from, to  int // counts of the needed and the needing entry
		wantError bool
	}{
		{"a fan-in within the limit", 1000, 1000, false},
		{"a fan-in past the limit", 1001, 1000, true},
		{"one task needs a large group", 99_999, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{Tasks: []Task{{Name: "a", Count: tt.from, Run: "x"}, {Name: "b", Count: tt.to, Needs: []string{"a"}, Run: "y"}}}
			_, err := j.Expand("", time.Time{})
			if got := err != nil; got != tt.wantError {
				t.Fatalf("Expand error = %v, want an error: %v", err, tt.wantError)
			}
			if err != nil && !strings.Contains(err.Error(), "tasks[1].needs") {
				t.Errorf("error %q does not name tasks[1].needs", err)
			}
		})
	}
}

// FuzzQuantity feeds the quantity parsers (CPU, memory, duration) arbitrary
// text, as every decoder that takes a quantity does: job specs, worker
// registrations and flags, scenarios, the server's configuration, the API's
// bodies. None may panic; an accepted value lies between 0 and its maximum,
// and survives the JSON form it is stored in: a stored quantity that does
// not read back would stop the server at its next start.
func FuzzQuantity(f *testing.F) {
	for _, s := range []string{"2", "0.5", "500m", "1e30", "-1", "NaN", "Inf", "-0", "1e30Ti", "NaNGi", "9223372036854775807m",
		"99999999999999999999m", "16Gi", "1Pi", "1.5Gi", "90s", "1h30m", "2562047h", "2562048h", "1e300", "-5m", "0x10", " 3 ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c, err := ParseCPU(s); err == nil {
			if c < 0 || c > MaxCPU {
				t.Fatalf("ParseCPU(%q) = %d, outside 0..%d", s, c, MaxCPU)
			}
			roundTrip(t, s, c)
		}
		if m, err := ParseMemory(s); err == nil {
			if m < 0 || m > MaxMemory {
				t.Fatalf("ParseMemory(%q) = %d, outside 0..%d", s, m, MaxMemory)
			}
			roundTrip(t, s, m)
		}
		if d, err := ParseDuration(s); err == nil {
			if d < 0 {
				t.Fatalf("ParseDuration(%q) = %d, negative", s, d)
			}
			roundTrip(t, s, d)
		}
		// Through the document decoder too, as a field's value.
		var r Resources
		if _, err := Decode([]byte("cpu: "+strconv.Quote(s)+"\nmemory: "+strconv.Quote(s)), &r); err == nil {
			if r.CPU < 0 || r.CPU > MaxCPU || r.Memory < 0 || r.Memory > MaxMemory {
				t.Fatalf("decoded %q as %+v", s, r)
			}
		} else {
			checkFieldErrors(t, err)
		}
	})
}

// roundTrip checks that v, parsed from s, reads back from its JSON form.
func roundTrip[Q interface{ CPU | Memory | Duration }](t *testing.T, s string, v Q) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	var back Q
	if err := json.Unmarshal(raw, &back); err != nil || back != v {
		t.Fatalf("%q parsed as %v is stored as %s and reads back as %v, %v", s, v, raw, back, err)
	}
}
