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
// detection never fails.
func detectResources(r model.ResourceSpec, log *slog.Logger) model.ResourceSpec {
	return machine{root: "/", cpus: runtime.NumCPU(), gpus: queryGPUs}.detect(r, log)
}

// machine is where detection looks: the root of the file system holding
// /proc and the cgroup mounts, the CPUs the process may run on, and the
// GPU query. Tests give a fake tree.
type machine struct {
	root string
	cpus int
	gpus func() (int, model.Memory, error)
}

func (m machine) detect(r model.ResourceSpec, log *slog.Logger) model.ResourceSpec {
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
	if r.GPUs == 0 || r.GPUMemory == 0 {
		n, mem, err := m.gpus()
		switch {
		case err != nil:
			log.Debug("GPUs not detected", "err", err)
		case n > 0:
			if r.GPUs == 0 {
				r.GPUs = n
			}
			if r.GPUMemory == 0 {
				r.GPUMemory = mem
			}
		}
	}
	return r
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

// queryGPUs asks nvidia-smi for the GPUs' memory; without nvidia-smi on
// PATH there are none.
func queryGPUs() (int, model.Memory, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return 0, 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("nvidia-smi: %w", err)
	}
	return parseNvidiaSmi(string(out))
}

// parseNvidiaSmi reads one memory.total (MiB) per line. A worker's
// gpuMemory is per GPU and a task may land on any of them, so the smallest
// is what every GPU can promise.
func parseNvidiaSmi(out string) (int, model.Memory, error) {
	n, least := 0, model.Memory(0)
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		mib, err := strconv.ParseFloat(line, 64)
		if err != nil || mib < 0 {
			return 0, 0, fmt.Errorf("nvidia-smi: %q is not a memory size in MiB", line)
		}
		if m := model.Memory(mib); n == 0 || m < least {
			least = m
		}
		n++
	}
	return n, least, nil
}
