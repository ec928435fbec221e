package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// detectResources fills the resources left zero with what this machine
// has, so `allot worker` needs no flags on a typical host: CPUs the process
// may use, memory from /proc/meminfo, each capped by the limits of the
// agent's cgroup (a container's), GPUs and their memory from nvidia-smi.
// Anything it cannot read (another OS, no NVIDIA driver) stays zero;
// detection never fails. It also returns the GPU devices nvidia-smi listed
// when the GPUs were detected rather than given: a worker declared with
// --gpus N has devices 0..N-1 (no list, no UUIDs), as the engine takes an
// empty list.
func detectResources(r model.ResourceSpec, log *slog.Logger) (model.ResourceSpec, []model.GPUDevice) {
	return machine{root: "/", cpus: runtime.NumCPU(), gpus: queryGPUs}.detect(r, log)
}

// machine is where detection looks: the root of the file system holding
// /proc and the cgroup mounts, the CPUs the process may run on, and the
// GPU query. Tests give a fake tree.
type machine struct {
	root string
	cpus int
	gpus func() ([]model.GPUDevice, error)
}

func (m machine) detect(r model.ResourceSpec, log *slog.Logger) (model.ResourceSpec, []model.GPUDevice) {
	var lim cgroupLimits
	if r.CPU == 0 || r.Memory == 0 {
		var err error
		if lim, err = readCgroupLimits(m.root); err != nil {
			log.Debug("cgroup limits not read in full", "err", err)
		}
	}
	// One line says what was detected and where each figure came from: the
	// host, or the cgroup file whose limit is below it.
	var detected []any
	if r.CPU == 0 {
		host := model.CPU(m.cpus * 1000)
		if lim.cpu > 0 && lim.cpu < host {
			r.CPU = lim.cpu
			detected = append(detected, "cpu", milli(r.CPU), "cpuFrom", lim.cpuFrom, "hostCPU", milli(host))
		} else {
			r.CPU = host
			detected = append(detected, "cpu", milli(r.CPU), "cpuFrom", "host")
		}
	}
	if r.Memory == 0 {
		host, err := readMeminfo(filepath.Join(m.root, "proc/meminfo"))
		if err != nil {
			log.Debug("memory not detected", "err", err)
		}
		switch {
		case lim.memory > 0 && (host == 0 || lim.memory < host):
			r.Memory = lim.memory
			detected = append(detected, "memory", mebi(r.Memory), "memoryFrom", lim.memFrom, "hostMemory", mebi(host))
		case host > 0:
			r.Memory = host
			detected = append(detected, "memory", mebi(r.Memory), "memoryFrom", "host")
		}
	}
	if len(detected) > 0 {
		log.Info("resources detected", detected...)
	}
	var devices []model.GPUDevice
	if r.GPUs == 0 || r.GPUMemory == 0 {
		ds, err := m.gpus()
		switch {
		case err != nil:
			log.Debug("GPUs not detected", "err", err)
		case len(ds) > 0:
			if r.GPUs == 0 {
				r.GPUs = len(ds)
				devices = ds
			}
			if r.GPUMemory == 0 {
				r.GPUMemory = leastGPUMemory(ds)
			}
		}
	}
	return r, devices
}

// milli and mebi write quantities as a job spec does, for the log.
func milli(c model.CPU) string   { return strconv.FormatInt(int64(c), 10) + "m" }
func mebi(m model.Memory) string { return strconv.FormatInt(int64(m), 10) + "Mi" }

func readMeminfo(path string) (model.Memory, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMeminfo(f)
}

// parseMeminfo reads MemTotal (in KiB) from /proc/meminfo's format and
// returns it in MiB.
func parseMeminfo(r io.Reader) (model.Memory, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("MemTotal line %q: want \"N kB\"", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("MemTotal line %q: %q is not a size", sc.Text(), f[0])
		}
		return model.Memory(kb / 1024), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no MemTotal line")
}

// gpuQuery is the nvidia-smi query the agent runs: one line per GPU with
// its index, UUID and total memory in MiB.
var gpuQuery = []string{"--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"}

// queryGPUs asks nvidia-smi for the GPUs; without nvidia-smi on PATH there
// are none.
func queryGPUs() ([]model.GPUDevice, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, gpuQuery...).Output()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi: %w", err)
	}
	return parseNvidiaSmi(string(out))
}

// parseNvidiaSmi reads gpuQuery's answer, "index, uuid, memory.total" per
// line, into devices ordered by index.
func parseNvidiaSmi(out string) ([]model.GPUDevice, error) {
	var ds []model.GPUDevice
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("nvidia-smi: %q is not \"index, uuid, memory\"", line)
		}
		idx, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("nvidia-smi: %q: %q is not a device index", line, strings.TrimSpace(f[0]))
		}
		mib, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil || mib < 0 {
			return nil, fmt.Errorf("nvidia-smi: %q: %q is not a memory size in MiB", line, strings.TrimSpace(f[2]))
		}
		for _, d := range ds {
			if d.Index == idx {
				return nil, fmt.Errorf("nvidia-smi: device index %d is listed twice", idx)
			}
		}
		ds = append(ds, model.GPUDevice{Index: idx, UUID: strings.TrimSpace(f[1]), MemoryMB: int64(mib)})
	}
	slices.SortFunc(ds, func(a, b model.GPUDevice) int { return a.Index - b.Index })
	return ds, nil
}

// leastGPUMemory is the memory of the smallest device. A worker's gpuMemory
// is per GPU and a task may land on any of them, so the smallest is what
// every GPU can promise.
func leastGPUMemory(ds []model.GPUDevice) model.Memory {
	least := model.Memory(0)
	for i, d := range ds {
		if m := model.Memory(d.MemoryMB); i == 0 || m < least {
			least = m
		}
	}
	return least
}
