package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
