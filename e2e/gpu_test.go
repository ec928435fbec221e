package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// envOf reads the NAME=value lines a task printed, by task.
func envOf(t *testing.T, c *cluster, job string) map[string]map[string]string {
	t.Helper()
	var logs api.Logs
	c.getJSON("/v1/jobs/"+job+"/logs", &logs)
	out := map[string]map[string]string{}
	for _, tl := range logs.Tasks {
		vars := map[string]string{}
		for line := range strings.Lines(tl.Output) {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
				vars[k] = v
			}
		}
		out[tl.Task] = vars
	}
	return out
}

// printGPUEnv is a task script that prints the GPU variables its worker
// set, each as NAME=value (unset ones as NAME=<unset>).
const printGPUEnv = `for v in CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES ALLOT_GPUS; do eval "echo $v=\${$v-<unset>}"; done; sleep 1`

func TestTwoOneGPUTasksOnADeclaredTwoGPUWorkerSeeDifferentDevices(t *testing.T) {
	c := start(t)
	c.startWorker("gpu1", "--slots", "3", "--cpu", "4", "--memory", "8Gi", "--gpus", "2", "--gpu-memory", "16Gi")
	j := c.submit(fmt.Sprintf(`
id: gpus
tasks:
  - name: train
    count: 2
    resources: {gpus: 1}
    run: '%s'
  - name: cpu-only
    run: '%s'
`, printGPUEnv, printGPUEnv))
	// Both GPU tasks run at once: each holds one of the two devices.
	waitUntil(t, "both GPU tasks running", 15*time.Second, func() bool {
		job := c.job(j.ID)
		return taskByName(job, "train-0").State == "running" && taskByName(job, "train-1").State == "running"
	})
	out, err := c.cli("get", j.ID)
	if err != nil || !strings.Contains(out, "GPUS") {
		t.Errorf("allot get while they run: %v\n%s", err, out)
	}
	final := c.waitJob(j.ID, 30*time.Second)
	if final.State != "succeeded" {
		t.Fatalf("job %s: %+v", final.State, final.Tasks)
	}
	env := envOf(t, c, j.ID)
	seen := map[string]string{}
	for _, task := range []string{"train-0", "train-1"} {
		e := env[task]
		dev := e["CUDA_VISIBLE_DEVICES"]
		if dev != "0" && dev != "1" {
			t.Errorf("%s sees CUDA_VISIBLE_DEVICES=%q, want one device of 0 and 1 (env %v)", task, dev, e)
		}
		if e["NVIDIA_VISIBLE_DEVICES"] != dev || e["ALLOT_GPUS"] != dev {
			t.Errorf("%s: NVIDIA_VISIBLE_DEVICES=%q ALLOT_GPUS=%q, want both %q", task, e["NVIDIA_VISIBLE_DEVICES"], e["ALLOT_GPUS"], dev)
		}
		if other, dup := seen[dev]; dup {
			t.Errorf("%s and %s both see device %s", other, task, dev)
		}
		seen[dev] = task
		if got := taskByName(final, task).GPUs; len(got) != 1 || strconv.Itoa(got[0]) != dev {
			t.Errorf("%s: the API shows devices %v, the task saw %q", task, got, dev)
		}
	}
	if e := env["cpu-only"]; e["CUDA_VISIBLE_DEVICES"] != "" || e["NVIDIA_VISIBLE_DEVICES"] != "none" {
		t.Errorf("a task asking no GPU sees %v, want no device", e)
	}
	started := 0
	for _, e := range c.events() {
		if e.Kind == "task_started" && e.Job == j.ID && strings.HasPrefix(e.Task, "train-") {
			var d struct {
				GPUs []int `json:"gpus"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || len(d.GPUs) != 1 || strconv.Itoa(d.GPUs[0]) != env[e.Task]["CUDA_VISIBLE_DEVICES"] {
				t.Errorf("task_started of %s records devices %v (%v), the task saw %q", e.Task, d.GPUs, err, env[e.Task]["CUDA_VISIBLE_DEVICES"])
			}
			started++
		}
	}
	if started != 2 {
		t.Errorf("%d task_started events of train tasks, want 2", started)
	}
}

func TestDetectedGPUsAreShownByUUID(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nprintf '0, GPU-11111111-aaaa, 24576\\n1, GPU-22222222-bbbb, 24576\\n'\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := start(t)
	c.startWorker("gpu1", "--slots", "2", "--cpu", "4", "--memory", "8Gi")
	j := c.submit(fmt.Sprintf("id: detected\ntasks: [{name: t, count: 2, resources: {gpus: 1, gpuMemory: 20Gi}, run: '%s'}]\n", printGPUEnv))
	if final := c.waitJob(j.ID, 30*time.Second); final.State != "succeeded" {
		t.Fatalf("job %s: %+v", final.State, final.Tasks)
	}
	var got []string
	for _, e := range envOf(t, c, j.ID) {
		got = append(got, e["CUDA_VISIBLE_DEVICES"]+" "+e["NVIDIA_VISIBLE_DEVICES"]+" "+e["ALLOT_GPUS"])
	}
	slices.Sort(got)
	want := []string{"GPU-11111111-aaaa GPU-11111111-aaaa 0", "GPU-22222222-bbbb GPU-22222222-bbbb 1"}
	if !slices.Equal(got, want) {
		t.Errorf("tasks saw %q, want the devices by UUID (%q)", got, want)
	}
}

func TestArrayTasksSeeTheirIndexOnceAndMaxSlotsThrottlesThem(t *testing.T) {
	c := start(t)
	c.worker("w1", 5)
	running := t.TempDir()
	// Each task marks itself running in a shared directory for a moment
	// and prints how many marks it saw: with maxSlots 2, never more than 2.
	j := c.submit(fmt.Sprintf(`
id: array
maxSlots: 2
tasks:
  - name: part
    count: 5
    run: |
      echo "ALLOT_TASK_INDEX=$ALLOT_TASK_INDEX"
      echo "ALLOT_TASK_COUNT=$ALLOT_TASK_COUNT"
      echo "ALLOT_TASK=$ALLOT_TASK"
      touch %[1]s/$ALLOT_TASK_INDEX
      echo "SEEN=$(ls %[1]s | wc -l)"
      sleep 0.3
      rm %[1]s/$ALLOT_TASK_INDEX
`, running))
	final := c.waitJob(j.ID, 60*time.Second)
	if final.State != "succeeded" {
		t.Fatalf("job %s: %+v", final.State, final.Tasks)
	}
	env := envOf(t, c, j.ID)
	var indices []string
	for task, e := range env {
		indices = append(indices, e["ALLOT_TASK_INDEX"])
		if e["ALLOT_TASK_COUNT"] != "5" || e["ALLOT_TASK"] != task || task != "part-"+e["ALLOT_TASK_INDEX"] {
			t.Errorf("%s saw %v", task, e)
		}
		if n, err := strconv.Atoi(strings.TrimSpace(e["SEEN"])); err != nil || n > 2 {
			t.Errorf("%s saw %q tasks of the job running, more than maxSlots 2", task, e["SEEN"])
		}
	}
	slices.Sort(indices)
	if want := []string{"0", "1", "2", "3", "4"}; !slices.Equal(indices, want) {
		t.Errorf("ALLOT_TASK_INDEX values %v, want each of %v once", indices, want)
	}
	// The server's own record agrees: in the event log's order, never more
	// than 2 of the job's tasks had started and not yet ended.
	now, most := 0, 0
	for _, e := range c.events() {
		if e.Job != j.ID {
			continue
		}
		switch e.Kind {
		case "task_started":
			now++
		case "task_succeeded", "task_failed", "task_requeued", "task_retry":
			now--
		}
		most = max(most, now)
	}
	if most != 2 {
		t.Errorf("at most %d tasks ran at once by the event log, want maxSlots 2", most)
	}
}
