package sqlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// BenchmarkCommitBatch measures group commit on a file database: each
// Commit updates every task of a job and appends one event per task, the
// shape of a scheduling cycle that starts (or a heartbeat sweep that
// updates) many tasks at once. rows/s counts task updates plus events.
func BenchmarkCommitBatch(b *testing.B) {
	for _, n := range []int{1, 100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("tasks=%d+events=%d", n, n), func(b *testing.B) {
			s, err := Open(tempPath(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := b.Context()
			tasks := make([]store.Task, n)
			for i := range tasks {
				tasks[i] = store.Task{Job: "j", Name: fmt.Sprintf("shard-%05d", i), Index: i, State: "ready"}
			}
			if _, err := s.CreateJob(ctx, store.Job{ID: "j", Queue: "q", State: "running", Spec: json.RawMessage(`{}`)}, tasks, nil); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			batch := store.Batch{Tasks: make([]store.Task, n), Events: make([]store.Event, n)}
			rows := 0
			for i := 0; b.Loop(); i++ {
				for k, tk := range tasks {
					tk.State, tk.Attempt, tk.Worker, tk.Started = "running", i+1, fmt.Sprintf("w-%03d", k%500), t0.Add(time.Duration(i))
					batch.Tasks[k] = tk
					batch.Events[k] = store.Event{At: tk.Started, Kind: "task_started", Job: "j", Task: tk.Name, Worker: tk.Worker,
						Data: json.RawMessage(`{"attempt":1}`)}
				}
				if err := s.Commit(ctx, batch); err != nil {
					b.Fatal(err)
				}
				rows += 2 * n
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkCreateJob measures submission: a job with 10 tasks and its
// job_submitted event, one transaction (one fsync) each.
func BenchmarkCreateJob(b *testing.B) {
	s, err := Open(tempPath(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	spec := json.RawMessage(`{"queue":"q","tasks":[{"name":"t","count":10,"command":["./run.sh"],"resources":{"cpu":1}}]}`)
	jobs := 0
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("job-%08d", i)
		tasks := make([]store.Task, 10)
		for k := range tasks {
			tasks[k] = store.Task{Job: id, Name: fmt.Sprintf("t-%d", k), Index: k, State: "ready"}
		}
		j := store.Job{ID: id, Queue: "q", Share: "team", Requestor: "ann", State: "pending", Submitted: time.Now(), Spec: spec}
		if _, err := s.CreateJob(ctx, j, tasks, []store.Event{{At: j.Submitted, Kind: "job_submitted", Job: id}}); err != nil {
			b.Fatal(err)
		}
		jobs++
	}
	b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkJobHeader reads one job's row, as a submission does to refuse a
// taken ID: half the IDs are stored, half are not.
func BenchmarkJobHeader(b *testing.B) {
	s, err := Open(tempPath(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	const stored = 1000
	batch := store.Batch{}
	for i := range stored {
		batch.Jobs = append(batch.Jobs, store.Job{ID: fmt.Sprintf("job-%06d", i), Queue: "q", State: "pending", Spec: json.RawMessage(`{}`)})
	}
	if err := s.Commit(ctx, batch); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		_, err := s.JobHeader(ctx, fmt.Sprintf("job-%06d", i%(2*stored)))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitSmallJobs commits the rounds of many one-task jobs: each
// op is one round that creates jobs new jobs (the job, its task, a
// job_submitted and a task_started event) and ends as many created in the
// round before (the job's state and end, its task's, a task_succeeded and
// a job_ended event), as the loop commits them under `allot bench
// --job-size 1`. cpu-µs/job is the process's CPU time (user and system)
// per job, which the fsync's wait does not hide.
func BenchmarkCommitSmallJobs(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s, err := Open(tempPath(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := b.Context()
			spec := json.RawMessage(`{"queue":"q","tasks":[{"name":"t","run":"true"}]}`)
			t0 := time.Now()
			var prev []store.Job
			jobs := 0
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				var batch store.Batch
				at := t0.Add(time.Duration(i) * time.Millisecond)
				for _, j := range prev {
					j.State, j.Ended, j.Spec = "succeeded", at, nil
					batch.Jobs = append(batch.Jobs, j)
					batch.Tasks = append(batch.Tasks, store.Task{Job: j.ID, Name: "t", State: "succeeded", Attempt: 1, Worker: "w-1",
						Started: j.Submitted, Ended: at, ExitCode: new(int)})
					batch.Events = append(batch.Events,
						store.Event{At: at, Kind: "task_succeeded", Job: j.ID, Task: "t", Worker: "w-1", Data: json.RawMessage(`{"attempt":1}`)},
						store.Event{At: at, Kind: "job_ended", Job: j.ID, Reason: "succeeded"})
				}
				prev = prev[:0]
				for k := range n {
					j := store.Job{ID: fmt.Sprintf("j-%07d-%03d", i, k), Queue: "q", Submitter: "bench", State: "running", Submitted: at, Spec: spec}
					prev = append(prev, j)
					batch.Jobs = append(batch.Jobs, j)
					batch.Tasks = append(batch.Tasks, store.Task{Job: j.ID, Name: "t", State: "running", Attempt: 1, Worker: "w-1", Started: at})
					batch.Events = append(batch.Events,
						store.Event{At: at, Kind: "job_submitted", Job: j.ID, Data: json.RawMessage(`{"queue":"q","tasks":1}`)},
						store.Event{At: at, Kind: "task_started", Job: j.ID, Task: "t", Worker: "w-1", Data: json.RawMessage(`{"attempt":1}`)})
				}
				if err := s.Commit(ctx, batch); err != nil {
					b.Fatal(err)
				}
				jobs += n
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(jobs), "cpu-µs/job")
		})
	}
}
