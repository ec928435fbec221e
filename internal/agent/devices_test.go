//go:build unix

package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// nvidiaSmiA100x2 is what `nvidia-smi --query-gpu=index,uuid,memory.total
// --format=csv,noheader,nounits` prints on a host with an 80 GB and a 40 GB
// A100 (recorded; the UUIDs are the host's own).
const nvidiaSmiA100x2 = "0, GPU-6f4a3b1e-2c9d-8e07-51a4-b3c2d1e0f9a8, 81920\n" +
	"1, GPU-0d9e8c7b-6a5f-4e3d-2c1b-a09f8e7d6c5b, 40960\n"

func TestParseNvidiaSmi(t *testing.T) {
	a100 := []model.GPUDevice{
		{Index: 0, UUID: "GPU-6f4a3b1e-2c9d-8e07-51a4-b3c2d1e0f9a8", MemoryMB: 81920},
		{Index: 1, UUID: "GPU-0d9e8c7b-6a5f-4e3d-2c1b-a09f8e7d6c5b", MemoryMB: 40960},
	}
	tests := []struct {
		name, in string
		want     []model.GPUDevice
		bad      bool
	}{
		{name: "two GPUs", in: nvidiaSmiA100x2, want: a100},
		{name: "out of order, blank lines and spaces", in: "\n 1 ,GPU-b , 24576.0 \n\n0, GPU-a, 24576\n",
			want: []model.GPUDevice{{Index: 0, UUID: "GPU-a", MemoryMB: 24576}, {Index: 1, UUID: "GPU-b", MemoryMB: 24576}}},
		{name: "no GPUs", in: ""},
		{name: "an error message", in: "No devices were found\n", bad: true},
		{name: "memory not known", in: "0, GPU-a, [N/A]\n", bad: true},
		{name: "an index twice", in: "0, GPU-a, 1024\n0, GPU-b, 1024\n", bad: true},
		{name: "the old query's answer", in: "81920\n", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNvidiaSmi(tt.in)
			if (err != nil) != tt.bad || !slices.Equal(got, tt.want) {
				t.Errorf("parseNvidiaSmi = %+v, %v; want %+v, bad=%v", got, err, tt.want, tt.bad)
			}
		})
	}
	if m := leastGPUMemory(a100); m != 40960 {
		t.Errorf("least GPU memory %d, want the smaller device's 40960", m)
	}
}

// fakeNvidiaSmi puts on PATH an nvidia-smi that prints out when asked the
// agent's query, and fails otherwise.
func fakeNvidiaSmi(t *testing.T, out string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "recorded.txt"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"[ \"$*\" = '" + strings.Join(gpuQuery, " ") + "' ] || { echo \"unexpected query: $*\" >&2; exit 2; }\n" +
		"cat '" + filepath.Join(dir, "recorded.txt") + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestDetectReadsDevicesFromNvidiaSmi(t *testing.T) {
	fakeNvidiaSmi(t, nvidiaSmiA100x2)
	log := slog.New(slog.DiscardHandler)
	got, devices := detectResources(spec.Resources{Memory: 77}, log)
	if got.GPUs != 2 || got.GPUMemory != 40960 || got.Memory != 77 {
		t.Errorf("detected %+v, want 2 GPUs of 40960 MiB", got)
	}
	if len(devices) != 2 || devices[1].UUID != "GPU-0d9e8c7b-6a5f-4e3d-2c1b-a09f8e7d6c5b" {
		t.Errorf("devices %+v", devices)
	}
	// Declared GPUs stand for devices 0..N-1: no list; the memory left
	// out is still detected.
	got, devices = detectResources(spec.Resources{GPUs: 4}, log)
	if got.GPUs != 4 || got.GPUMemory != 40960 || devices != nil {
		t.Errorf("declared 4 GPUs: %+v, devices %+v", got, devices)
	}
}

func TestDetectFillsOnlyWhatIsMissing(t *testing.T) {
	fakeNvidiaSmi(t, "0, GPU-a, 1024\n")
	log := slog.New(slog.DiscardHandler)
	got, devices := detectResources(spec.Resources{Memory: 77, GPUs: 1, GPUMemory: 5}, log)
	if got.CPU <= 0 || got.Memory != 77 || got.GPUs != 1 || got.GPUMemory != 5 || devices != nil {
		t.Errorf("detected %+v, devices %+v", got, devices)
	}
	given := spec.Resources{CPU: 1500, Memory: 2, GPUs: 3, GPUMemory: 4}
	if got, _ := detectResources(given, log); got != given {
		t.Errorf("detection changed given resources: %+v", got)
	}
}

func TestDetectWithoutNvidiaSmiFindsNoGPU(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	got, devices := detectResources(spec.Resources{}, slog.New(slog.DiscardHandler))
	if got.GPUs != 0 || devices != nil {
		t.Errorf("detected %+v, devices %+v", got, devices)
	}
}

func TestDeviceEnv(t *testing.T) {
	tests := []struct {
		name       string
		gpus       []model.GPUDevice
		workerGPUs int
		want       []string
	}{
		{name: "a worker without GPUs leaves the variables alone"},
		{name: "no GPU asked on a GPU worker hides them all", workerGPUs: 2,
			want: []string{"CUDA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES=none", "ALLOT_GPUS="}},
		{name: "declared devices by index", workerGPUs: 4, gpus: []model.GPUDevice{{Index: 1}, {Index: 3}},
			want: []string{"ALLOT_GPUS=1,3", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=1,3", "NVIDIA_VISIBLE_DEVICES=1,3"}},
		{name: "detected devices by UUID", workerGPUs: 2, gpus: []model.GPUDevice{{Index: 1, UUID: "GPU-b"}},
			want: []string{"ALLOT_GPUS=1", "CUDA_VISIBLE_DEVICES=GPU-b", "NVIDIA_VISIBLE_DEVICES=GPU-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deviceEnv(tt.gpus, tt.workerGPUs); !slices.Equal(got, tt.want) {
				t.Errorf("deviceEnv = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvironPlacesTheTaskInItsArray(t *testing.T) {
	as := api.Assignment{Attempt: api.Attempt{Job: "j", Task: "shard-3", Attempt: 1}, TaskIndex: 3, TaskCount: 5,
		Env: map[string]string{"ALLOT_TASK_INDEX": "99"}}
	env := environ(as, "/tmp/result.json", nil)
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	if last["ALLOT_TASK_INDEX"] != "3" || last["ALLOT_TASK_COUNT"] != "5" || last["ALLOT_JOB"] != "j" {
		t.Errorf("environment %q", env)
	}
	as.TaskCount = 0 // an older server
	for _, kv := range environ(as, "/tmp/result.json", nil) {
		if strings.HasPrefix(kv, "ALLOT_TASK_COUNT=") {
			t.Errorf("ALLOT_TASK_COUNT set without a count: %q", kv)
		}
	}
}

// gpuEnvScript prints the variables deviceEnv sets, or "unset".
const gpuEnvScript = `echo "CUDA=${CUDA_VISIBLE_DEVICES-unset} NVIDIA=${NVIDIA_VISIBLE_DEVICES-unset} ALLOT=${ALLOT_GPUS-unset}"`

func TestAgentShowsATaskOnlyItsDevices(t *testing.T) {
	fakeNvidiaSmi(t, "0, GPU-a, 1024\n1, GPU-b, 1024\n")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1") // the agent's own: not the task's
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.Slots = 2
	ag := start(t, cfg)
	one := assign("j", "one", 1, gpuEnvScript, map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"})
	one.GPUs, one.TaskCount = []model.GPUDevice{{Index: 1, UUID: "GPU-b"}}, 1
	none := assign("j", "none", 1, gpuEnvScript, nil)
	none.TaskCount = 1
	fs.give(api.Lease{Assignments: []api.Assignment{one, none}})
	waitFor(t, "the reports", func() bool {
		_, a := fs.report(one.Attempt)
		_, b := fs.report(none.Attempt)
		return a && b
	})
	if err := ag.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	regs, _, _ := fs.snapshot()
	if len(regs) != 1 || regs[0].Resources.GPUs != 2 || len(regs[0].GPUDevices) != 2 || regs[0].GPUDevices[1].UUID != "GPU-b" {
		t.Errorf("registrations %+v, want the two detected devices", regs)
	}
	for a, want := range map[api.Attempt]string{
		one.Attempt:  "CUDA=GPU-b NVIDIA=GPU-b ALLOT=1",
		none.Attempt: "CUDA= NVIDIA=none ALLOT=",
	} {
		if r, _ := fs.report(a); strings.TrimSpace(r.Output) != want {
			t.Errorf("%s saw %q, want %q", a.Task, r.Output, want)
		}
	}
}

// A server that predates GPU devices refuses the field as unknown: the
// agent registers without it, and leaves the tasks' GPU variables alone,
// as before.
func TestAgentGPUDevicesAgainstAServerThatDoesNotKnowThem(t *testing.T) {
	fakeNvidiaSmi(t, "0, GPU-a, 1024\n1, GPU-b, 1024\n")
	t.Setenv("CUDA_VISIBLE_DEVICES", "from-the-agent")
	fs, url := newFakeServer(t)
	fs.unknownFields = []string{"gpuDevices"}
	ag := start(t, testConfig(url))
	a := assign("j", "a", 1, gpuEnvScript, nil) // no TaskCount: an older server
	fs.give(api.Lease{Assignments: []api.Assignment{a}})
	waitFor(t, "the report", func() bool { _, ok := fs.report(a.Attempt); return ok })
	if err := ag.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	regs, _, _ := fs.snapshot()
	if len(regs) != 1 || regs[0].GPUDevices != nil || regs[0].Resources.GPUs != 2 {
		t.Errorf("registrations %+v, want one with 2 GPUs and no device list", regs)
	}
	if r, _ := fs.report(a.Attempt); strings.TrimSpace(r.Output) != "CUDA=from-the-agent NVIDIA=unset ALLOT=unset" {
		t.Errorf("the task saw %q", r.Output)
	}
}
