package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// benchAgentFigures is where the time of the real agents went in the
// throughput phase (allot bench --exec), from agent.Stats.
type benchAgentFigures struct {
	Agents int `json:"agents"`
	// Per task, on average: the lease answer's arrival to a slot
	// (QueuedMs: taken ahead with --prefetch, or while every slot was
	// busy), the slot to the process start (SetupMs), the process's life
	// (RunMs), its reaping to the report queued (FinishMs), and the report
	// queued to the server taking it (DeliverMs).
	QueuedMs  float64 `json:"queuedMs"`
	SetupMs   float64 `json:"setupMs"`
	RunMs     float64 `json:"runMs"`
	FinishMs  float64 `json:"finishMs"`
	DeliverMs float64 `json:"deliverMs"`
	// SlotBusy is the share of slot-time an attempt held a slot (setup,
	// process, finish); SlotRunning the share a process ran. The rest a
	// slot waited for the server: the report's delivery, the server's
	// round, the next lease answer.
	SlotBusy    float64 `json:"slotBusy"`
	SlotRunning float64 `json:"slotRunning"`
	// Requests and how well they batch.
	LeaseRequests     int64   `json:"leaseRequests"`
	ReportRequests    int64   `json:"reportRequests"`
	ReportsPerRequest float64 `json:"reportsPerRequest"`
}

// task is the task of the bench's jobs: a no-op for the no-op workers,
// the --exec command (no shell) for real agents.
func (b *benchRun) task(n int) spec.Task {
	if len(b.cfg.Exec) > 0 {
		return spec.Task{Name: "t", Count: n, Command: b.cfg.Exec}
	}
	return spec.Task{Name: "t", Count: n, Run: "true"}
}

// benchAgents are the real agents of allot bench --exec: the code of
// allot worker (internal/agent) in this process, each with its own state
// directory and an Info-level log in the data directory, as allot worker
// runs, talking to the server over loopback HTTP.
type benchAgents struct {
	agents []*agent.Agent
	slots  int
	stop   context.CancelFunc
	wg     sync.WaitGroup
	log    *os.File
}

// startAgents starts --workers agents sharing --slots, with a worker
// token when the server checks them, waits until the server knows them
// all, and keeps b.done at the count of reports the server took.
func (b *benchRun) startAgents(ctx context.Context, serverURL, dataDir string, werr chan<- error) (*benchAgents, error) {
	token := ""
	if b.cfg.Auth {
		t, err := b.c.CreateToken(ctx, api.CreateToken{Name: "bench-agents", Role: "worker", Workers: []string{"bench-agent-*"}})
		if err != nil {
			return nil, fmt.Errorf("creating the agents' token: %w", err)
		}
		token = t.Secret
	}
	logf, err := os.Create(filepath.Join(dataDir, "agents.log"))
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	actx, stop := context.WithCancel(context.WithoutCancel(ctx))
	ba := &benchAgents{slots: b.cfg.Slots, stop: stop, log: logf}
	for i := range b.cfg.Workers {
		slots := b.cfg.Slots / b.cfg.Workers
		if i < b.cfg.Slots%b.cfg.Workers {
			slots++
		}
		name := fmt.Sprintf("bench-agent-%03d", i)
		a, err := agent.New(agent.Config{
			Server: serverURL, Token: token, Name: name, Slots: slots, Prefetch: b.cfg.Prefetch, Cgroups: b.cfg.Cgroups,
			Resources: spec.Resources{CPU: 1000 * spec.CPU(slots), Memory: 1024 * spec.Memory(slots)},
			StateDir:  filepath.Join(dataDir, name),
			Logger:    log,
			Started:   b.started,
		})
		if err != nil {
			ba.close()
			return nil, err
		}
		ba.agents = append(ba.agents, a)
		ba.wg.Go(func() {
			if err := a.Run(actx); err != nil {
				werr <- fmt.Errorf("agent %s: %w", name, err)
			}
		})
	}
	ba.wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-t.C:
			}
			b.done.Store(ba.stats().Reported)
		}
	})
	for {
		ws, err := b.c.Workers(ctx)
		if err != nil {
			ba.close()
			return nil, err
		}
		if len(ws) == len(ba.agents) {
			return ba, nil
		}
		select {
		case <-ctx.Done():
			ba.close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// started notes when a task's process started.
func (b *benchRun) started(a api.Attempt) {
	now := time.Now()
	b.mu.Lock()
	b.received[a.Job] = append(b.received[a.Job], now)
	b.mu.Unlock()
}

// stats sums the agents' figures.
func (ba *benchAgents) stats() agent.Stats {
	var s agent.Stats
	for _, a := range ba.agents {
		x := a.Stats()
		s.Accepted += x.Accepted
		s.Started += x.Started
		s.Reported += x.Reported
		s.LeaseRequests += x.LeaseRequests
		s.ReportRequests += x.ReportRequests
		s.Queued += x.Queued
		s.Setup += x.Setup
		s.Run += x.Run
		s.Finish += x.Finish
		s.Deliver += x.Deliver
	}
	return s
}

// figures turns the agents' stats over a phase of the given length into
// per-task means and slot shares.
func (ba *benchAgents) figures(s agent.Stats, elapsed time.Duration) *benchAgentFigures {
	f := &benchAgentFigures{Agents: len(ba.agents), LeaseRequests: s.LeaseRequests, ReportRequests: s.ReportRequests}
	perTask := func(d time.Duration, n int64) float64 {
		if n == 0 {
			return 0
		}
		return round2(float64(d) / float64(n) / float64(time.Millisecond))
	}
	f.QueuedMs = perTask(s.Queued, s.Started)
	f.SetupMs, f.RunMs, f.FinishMs = perTask(s.Setup, s.Started), perTask(s.Run, s.Started), perTask(s.Finish, s.Started)
	f.DeliverMs = perTask(s.Deliver, s.Reported)
	if slotTime := float64(ba.slots) * float64(elapsed); slotTime > 0 {
		f.SlotBusy = round2(float64(s.Setup+s.Run+s.Finish) / slotTime)
		f.SlotRunning = round2(float64(s.Run) / slotTime)
	}
	if s.ReportRequests > 0 {
		f.ReportsPerRequest = round2(float64(s.Reported) / float64(s.ReportRequests))
	}
	return f
}

// close stops the agents (they deliver what they hold) and waits for them.
func (ba *benchAgents) close() {
	ba.stop()
	ba.wg.Wait()
	ba.log.Close()
}

// printAgents prints where the agents' time went.
func printAgents(w io.Writer, c benchConfig, f *benchAgentFigures) {
	fmt.Fprintf(w, "agents      %d real agent(s), %d slots (prefetch %d each), each task runs %q: per task queued %s, setup %s, process %s, finish %s, report delivery %s\n",
		f.Agents, c.Slots, c.Prefetch, c.Exec, ms(f.QueuedMs), ms(f.SetupMs), ms(f.RunMs), ms(f.FinishMs), ms(f.DeliverMs))
	fmt.Fprintf(w, "            slots held %.0f%% of the time (a process ran %.0f%%), the rest waiting for the server; %.1f reports per request, %d lease requests\n",
		100*f.SlotBusy, 100*f.SlotRunning, f.ReportsPerRequest, f.LeaseRequests)
}
