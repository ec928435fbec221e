package web

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
)

// This file builds what the pages show beyond the snapshot: a job's
// explanation and output, the tasks each worker runs and what they hold of
// it, the jobs' progress, and each fair-share group's usage against its
// entitlement.

// Bounds of the job page's output section: the API and allot logs give it
// all.
const (
	maxLogTasks = 20
	maxLogBytes = 8 << 10
)

// jobDetails is the job page's explanation and output, read once per page
// load (not on the live part's polls: an explanation runs a what-if).
type jobDetails struct {
	Explain     *api.Explanation
	ExplainNote string
	Logs        []api.TaskLog
	MoreLogs    int
	// Ended says the job can take no action any more.
	Ended bool
}

func (d *Dashboard) jobDetails(ctx context.Context, j api.Job) jobDetails {
	out := jobDetails{Ended: j.State != "pending" && j.State != "running"}
	if !out.Ended {
		x, err := d.ctrl.Explain(ctx, j.ID)
		if err != nil {
			out.ExplainNote = "No explanation: " + err.Error()
		} else {
			out.Explain = &x
		}
	}
	if l, err := d.ctrl.Logs(ctx, j.ID); err == nil {
		for _, tl := range l.Tasks {
			if tl.Output == "" {
				continue
			}
			if len(out.Logs) == maxLogTasks {
				out.MoreLogs++
				continue
			}
			if len(tl.Output) > maxLogBytes {
				tl.Output = "…" + tl.Output[len(tl.Output)-maxLogBytes:]
			}
			out.Logs = append(out.Logs, tl)
		}
	}
	return out
}

// progress is a job's task counts as the jobs list shows them.
type progress struct {
	Total, Done, Running, Waiting, Failed int
	// DoneW is the CSS width of the ended tasks' bar.
	DoneW string
}

func progressOf(counts map[string]int) progress {
	var p progress
	for state, n := range counts {
		p.Total += n
		switch state {
		case "succeeded", "cancelled":
			p.Done += n
		case "failed":
			p.Done += n
			p.Failed += n
		case "running":
			p.Running += n
		default:
			p.Waiting += n
		}
	}
	p.DoneW = percent(float64(p.Done), float64(max(p.Total, 1)))
	return p
}

// workerRow is a worker with the tasks it runs and what they hold.
type workerRow struct {
	api.Worker
	Tasks []control.WorkerTask
	// Allocated sums the running tasks' requests, against the worker's
	// resources (Resources).
	Allocated model.Resources
	Use       []useBar
}

// useBar is one resource of a worker: how much its tasks hold of it.
type useBar struct {
	Name, Text, W string
	Over          bool
}

func workerRowOf(w api.Worker, tasks []control.WorkerTask) workerRow {
	row := workerRow{Worker: w, Tasks: tasks}
	for _, t := range tasks {
		row.Allocated = row.Allocated.Add(t.Resources)
	}
	capa := w.Resources.Model()
	add := func(name string, used, of int64, unit func(int64) string) {
		if of <= 0 && used <= 0 {
			return
		}
		row.Use = append(row.Use, useBar{Name: name, Text: unit(used) + " / " + unit(of), W: percent(float64(used), float64(max(of, 1))), Over: used > of})
	}
	cores := func(m int64) string { return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64) }
	mem := func(mb int64) string {
		switch {
		case mb == 0:
			return "0"
		case mb >= 1024:
			return strconv.FormatFloat(math.Round(float64(mb)/102.4)/10, 'f', -1, 64) + "Gi"
		}
		return fmt.Sprintf("%dMi", mb)
	}
	count := func(n int64) string { return fmt.Sprint(n) }
	add("CPU", row.Allocated.MilliCPU, capa.MilliCPU, cores)
	add("mem", row.Allocated.MemoryMB, capa.MemoryMB, mem)
	add("GPUs", row.Allocated.GPUs, capa.GPUs, count)
	add("GPU mem", row.Allocated.GPUMemoryMB, capa.GPUMemoryMB, mem)
	return row
}

// shareRow is one share of a fair-share queue: what it uses against what
// it is entitled to.
type shareRow struct {
	Share            string
	Running, Waiting int
	WeightFactor     float64
	Usage            float64
	// RunningPct is the share's running tasks as a percentage of the
	// queue's pool; EntitledPct its entitlement there.
	RunningPct, EntitledPct float64
	RunW, EntitledW         string
	Above                   bool
}

// shareRows reads a fairshare queue's status (GET /v1/queues' status) into
// rows, with the pool's size in slots; nil for another policy.
func shareRows(status any, poolSlots int) []shareRow {
	st, ok := status.([]fairshare.ShareStatus)
	if !ok {
		return nil
	}
	out := make([]shareRow, 0, len(st))
	for _, s := range st {
		if s.Running == 0 && s.Waiting == 0 && s.Usage == 0 {
			continue
		}
		r := shareRow{Share: s.Share, Running: s.Running, Waiting: s.Waiting, WeightFactor: s.WeightFactor, Usage: s.Usage,
			EntitledPct: 100 * s.EntitledFraction}
		if poolSlots > 0 {
			r.RunningPct = 100 * float64(s.Running) / float64(poolSlots)
		}
		r.RunW, r.EntitledW = percent(r.RunningPct, 100), percent(r.EntitledPct, 100)
		r.Above = r.EntitledPct > 0 && r.RunningPct > r.EntitledPct+0.05
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b shareRow) int { return strings.Compare(a.Share, b.Share) })
	return out
}

// poolSlots counts the slots of the ready workers whose labels match a
// queue's pool, as the engine's pool does.
func poolSlots(pool map[string]string, ws []api.Worker) int {
	n := 0
	for _, w := range ws {
		if w.State != string(model.WorkerReady) {
			continue
		}
		match := true
		for k, v := range pool {
			if w.Labels[k] != v {
				match = false
				break
			}
		}
		if match {
			n += max(w.Slots, 1)
		}
	}
	return n
}

// since is how long ago t was, as people read it: 2m5s; "" for none.
func since(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return max(now.Sub(t), 0).Round(time.Second).String()
}
