// Package storetest is the suite every store.Store implementation must pass,
// so the control loop can rely on one behaviour whichever database is
// underneath (the same idea as River's driver test suite). An
// implementation's test calls Run with a function that opens an empty store:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openEmpty(t) })
//	}
package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// opener returns a new, empty store for one test. The suite closes it when
// the test ends (once), so the implementation's open function need not.
type opener func(t *testing.T) store.Store

// Run runs the whole suite against one implementation, one subtest per
// behaviour. open must return a new, empty store each time it is called.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	o := opener(open)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, opener)
	}{
		{"CreateJobAssignsIncreasingSeq", testCreateJobAssignsSeq},
		{"CreateJobStoresTasksInSpecOrderAndEvents", testCreateJobStoresAll},
		{"CreateJobDuplicateIsRejectedAndWritesNothing", testCreateJobDuplicate},
		{"CreateJobInvalidWritesNothing", testCreateJobInvalid},
		{"CreateJobConcurrent", testCreateJobConcurrent},
		{"JobNotFound", testJobNotFound},
		{"JobsFilterAndPage", testJobsFilterAndPage},
		{"CommitUpsertsTasks", testCommitUpsertsTasks},
		{"CommitUpsertsJobsKeepingSeqAndSpec", testCommitUpsertsJobs},
		{"CommitUpsertsWorkers", testCommitUpsertsWorkers},
		{"CommitIsAllOrNothing", testCommitAtomic},
		{"CommitEmptyBatch", testCommitEmpty},
		{"CommitLargeBatch", testCommitLargeBatch},
		{"EventsOrderedAndPaged", testEventsOrderedAndPaged},
		{"EventsTailAndSince", testEventsTailAndSince},
		{"UnfinishedFollowsStateChanges", testUnfinished},
		{"KVRoundTrip", testKV},
		{"TimesRoundTripExactlyInUTC", testTimes},
		{"JSONAndOutputRoundTripByteExact", testBytes},
		{"ConcurrentReadersSeeWholeCommits", testConcurrentReaders},
		{"CallsAfterCloseFail", testClose},
		{"TokensRoundTrip", testTokensRoundTrip},
		{"TokenLimitsRoundTrip", testTokenLimitsRoundTrip},
		{"TokenDuplicateIsRejectedAndWritesNothing", testTokenDuplicate},
		{"TokenInvalidWritesNothing", testTokenInvalid},
		{"RevokeTokenKeepsTheFirstTime", testRevokeToken},
		{"RowRulesAreTheSharedChecks", testRowRulesAreTheSharedChecks},
		{"JobsFilterBySubmitter", testJobsFilterBySubmitter},
		{"AttemptsRoundTripAndFilter", testAttemptsRoundTripAndFilter},
		{"OutputAppendKeepsTheTail", testOutputAppendKeepsTheTail},
		{"OutputOffsetsOutOfRangeAreRefused", testOutputOffsetsOutOfRangeAreRefused},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, o) })
	}
}

// store opens a store that is closed when the test ends.
func (o opener) store(t *testing.T) store.Store {
	t.Helper()
	s := o(t)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// t0 is a base time with nanoseconds, so a store that rounds is caught.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// newJob builds a pending job; fields are set by the caller as needed.
func newJob(id, queue, share string) store.Job {
	return store.Job{
		ID: id, Queue: queue, Share: share, Requestor: "ann", Submitter: "ann's token", State: "pending", Priority: 1,
		Submitted: t0, Spec: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id)),
	}
}

// newTasks builds n ready tasks of job, named t0..t(n-1) with Index = i.
func newTasks(job string, n int) []store.Task {
	out := make([]store.Task, n)
	for i := range out {
		out[i] = store.Task{Job: job, Name: fmt.Sprintf("t%d", i), Index: i, State: "ready"}
	}
	return out
}

func ev(kind, job string) store.Event {
	return store.Event{At: t0, Kind: kind, Job: job}
}

func mustCreate(t *testing.T, s store.Store, j store.Job, tasks []store.Task, events ...store.Event) store.Job {
	t.Helper()
	got, err := s.CreateJob(t.Context(), j, tasks, events)
	if err != nil {
		t.Fatalf("CreateJob(%s): %v", j.ID, err)
	}
	return got
}

func mustCommit(t *testing.T, s store.Store, b store.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func mustJob(t *testing.T, s store.Store, id string) (store.Job, []store.Task) {
	t.Helper()
	j, tasks, err := s.Job(t.Context(), id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return j, tasks
}

func allEvents(t *testing.T, s store.Store) []store.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), store.EventFilter{})
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return evs
}

func allJobs(t *testing.T, s store.Store) []store.Job {
	t.Helper()
	jobs, err := s.Jobs(t.Context(), store.JobFilter{})
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	return jobs
}

// equal fails the test when got and want differ, printing both.
func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// withSeq is want as the store returns it: Seq assigned.
func withSeq(j store.Job, seq int64) store.Job {
	j.Seq = seq
	return j
}

func testCreateJobAssignsSeq(t *testing.T, o opener) {
	s := o.store(t)
	var last int64
	for _, id := range []string{"b", "a", "c"} { // IDs out of order: Seq is arrival
		j := newJob(id, "q", "")
		j.Seq = 1000 // ignored
		got := mustCreate(t, s, j, nil)
		if got.Seq <= last {
			t.Fatalf("job %s: Seq %d, want > %d", id, got.Seq, last)
		}
		last = got.Seq
		equal(t, "returned job", got, withSeq(j, got.Seq))
		stored, _ := mustJob(t, s, id)
		equal(t, "stored job", stored, got)
	}
}

func testCreateJobStoresAll(t *testing.T, o opener) {
	s := o.store(t)
	tasks := newTasks("j", 4)
	code := 3
	tasks[2].ExitCode = &code
	tasks[3].Job = "" // filled in by the store
	shuffled := []store.Task{tasks[2], tasks[0], tasks[3], tasks[1]}
	got := mustCreate(t, s, newJob("j", "q", "s"), shuffled, ev("job_submitted", "j"), ev("task_ready", "j"))

	j, stored := mustJob(t, s, "j")
	equal(t, "job", j, got)
	header, err := s.JobHeader(t.Context(), "j")
	if err != nil {
		t.Fatalf("JobHeader: %v", err)
	}
	equal(t, "job header", header, got)
	if _, err := s.JobHeader(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("JobHeader of an unknown job: %v, want ErrNotFound", err)
	}
	want := slices.Clone(tasks)
	want[3].Job = "j"
	equal(t, "tasks in Index order", stored, want)

	evs := allEvents(t, s)
	if len(evs) != 2 || evs[0].Kind != "job_submitted" || evs[1].Kind != "task_ready" {
		t.Fatalf("events = %+v, want job_submitted then task_ready", evs)
	}
}

func testCreateJobDuplicate(t *testing.T, o opener) {
	s := o.store(t)
	orig := mustCreate(t, s, newJob("dup", "q", ""), newTasks("dup", 2), ev("job_submitted", "dup"))
	_, origTasks := mustJob(t, s, "dup")

	again := newJob("dup", "other", "x")
	again.Spec = json.RawMessage(`{"second":true}`)
	_, err := s.CreateJob(t.Context(), again, newTasks("dup", 5), []store.Event{ev("job_submitted", "dup")})
	if !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("second CreateJob: err = %v, want ErrDuplicate", err)
	}
	j, tasks := mustJob(t, s, "dup")
	equal(t, "job after duplicate", j, orig)
	equal(t, "tasks after duplicate", tasks, origTasks)
	if evs := allEvents(t, s); len(evs) != 1 {
		t.Errorf("events after duplicate = %d, want 1: %+v", len(evs), evs)
	}
	// The store still works after the refused transaction.
	mustCreate(t, s, newJob("next", "q", ""), nil)
}

func testCreateJobInvalid(t *testing.T, o opener) {
	for _, tc := range []struct {
		name  string
		job   store.Job
		tasks []store.Task
		evs   []store.Event
	}{
		{"EmptyID", newJob("", "q", ""), nil, nil},
		{"TaskOfAnotherJob", newJob("j", "q", ""), append(newTasks("j", 2), store.Task{Job: "k", Name: "x", State: "ready"}), nil},
		{"TwoTasksOneName", newJob("j", "q", ""), append(newTasks("j", 2), store.Task{Job: "j", Name: "t1", Index: 2, State: "ready"}), nil},
		{"TaskWithoutName", newJob("j", "q", ""), append(newTasks("j", 2), store.Task{Job: "j", Index: 2, State: "ready"}), nil},
		{"SpecNotJSON", func() store.Job { j := newJob("j", "q", ""); j.Spec = json.RawMessage(`{"a":`); return j }(), nil, nil},
		{"EventWithoutKind", newJob("j", "q", ""), newTasks("j", 2), []store.Event{ev("job_submitted", "j"), {Job: "j"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := o.store(t)
			_, err := s.CreateJob(t.Context(), tc.job, tc.tasks, tc.evs)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("CreateJob: err = %v, want ErrInvalid", err)
			}
			if jobs := allJobs(t, s); len(jobs) != 0 {
				t.Errorf("jobs stored after a refused CreateJob: %+v", jobs)
			}
			if _, _, err := s.Job(t.Context(), tc.job.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Job after refused CreateJob: err = %v, want ErrNotFound", err)
			}
			if evs := allEvents(t, s); len(evs) != 0 {
				t.Errorf("events stored after a refused CreateJob: %+v", evs)
			}
		})
	}
}

func testCreateJobConcurrent(t *testing.T, o opener) {
	s := o.store(t)
	const goroutines, each = 4, 10
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seqs = map[int64]string{}
		dups int
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("g%d-%d", g, i)
				j, err := s.CreateJob(t.Context(), newJob(id, "q", ""), newTasks(id, 3), nil)
				if err != nil {
					t.Errorf("CreateJob(%s): %v", id, err)
					return
				}
				// Every goroutine also races for one shared ID.
				_, err = s.CreateJob(t.Context(), newJob("shared", "q", ""), nil, nil)
				mu.Lock()
				if prev, ok := seqs[j.Seq]; ok {
					t.Errorf("jobs %s and %s got the same Seq %d", prev, id, j.Seq)
				}
				seqs[j.Seq] = id
				if errors.Is(err, store.ErrDuplicate) {
					dups++
				} else if err != nil {
					t.Errorf("CreateJob(shared): %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got, want := len(allJobs(t, s)), goroutines*each+1; got != want {
		t.Errorf("jobs stored = %d, want %d", got, want)
	}
	if want := goroutines*each - 1; dups != want {
		t.Errorf("ErrDuplicate for the shared ID %d times, want %d", dups, want)
	}
}

func testJobNotFound(t *testing.T, o opener) {
	s := o.store(t)
	mustCreate(t, s, newJob("there", "q", ""), nil)
	if _, _, err := s.Job(t.Context(), "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Job(missing): err = %v, want ErrNotFound", err)
	}
}

func testJobsFilterAndPage(t *testing.T, o opener) {
	s := o.store(t)
	queues, shares, states := []string{"q1", "q2"}, []string{"a", "b", ""}, []string{"pending", "running", "failed", "succeeded"}
	var all []store.Job
	for i := range 24 {
		j := newJob(fmt.Sprintf("job-%02d", 23-i), queues[i%2], shares[i%3])
		all = append(all, mustCreate(t, s, j, nil))
	}
	// States change after creation, through Commit, as in the server.
	var b store.Batch
	for i := range all {
		all[i].State = states[(i/2)%4]
		b.Jobs = append(b.Jobs, all[i])
	}
	mustCommit(t, s, b)

	match := func(f store.JobFilter) []store.Job {
		var out []store.Job
		order := all
		if f.Newest {
			order = slices.Clone(all)
			slices.Reverse(order)
		}
		for _, j := range order {
			cursor := j.Seq > f.AfterSeq
			if f.Newest {
				cursor = f.AfterSeq == 0 || j.Seq < f.AfterSeq
			}
			if cursor && (len(f.States) == 0 || slices.Contains(f.States, j.State)) &&
				(f.Queue == "" || j.Queue == f.Queue) && (f.Share == "" || j.Share == f.Share) &&
				(len(f.Queues) == 0 || slices.Contains(f.Queues, j.Queue)) && (len(f.Shares) == 0 || slices.Contains(f.Shares, j.Share)) {
				out = append(out, j)
			}
		}
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.JobFilter
	}{
		{"All", store.JobFilter{}},
		{"OneState", store.JobFilter{States: []string{"running"}}},
		{"TwoStates", store.JobFilter{States: []string{"pending", "failed"}}},
		{"UnknownState", store.JobFilter{States: []string{"nope"}}},
		{"Queue", store.JobFilter{Queue: "q2"}},
		{"Share", store.JobFilter{Share: "b"}},
		{"QueueShareState", store.JobFilter{Queue: "q1", Share: "a", States: []string{"pending", "succeeded"}}},
		{"AfterSeq", store.JobFilter{AfterSeq: all[9].Seq}},
		{"Limit", store.JobFilter{Limit: 5}},
		{"AfterSeqLimitQueue", store.JobFilter{AfterSeq: all[3].Seq, Limit: 4, Queue: "q1"}},
		{"AnyOfShares", store.JobFilter{Shares: []string{"a", ""}}},
		{"AnyOfQueuesAndShares", store.JobFilter{Queues: []string{"q2", "q3"}, Shares: []string{"b", "c"}}},
		{"AnyOfQueuesWithQueue", store.JobFilter{Queue: "q1", Queues: []string{"q2"}}},
		{"AnyOfSharesPaged", store.JobFilter{Shares: []string{"b"}, AfterSeq: all[4].Seq, Limit: 3}},
		{"Newest", store.JobFilter{Newest: true}},
		{"NewestLimit", store.JobFilter{Newest: true, Limit: 4}},
		{"NewestBeforeSeqQueue", store.JobFilter{Newest: true, AfterSeq: all[15].Seq, Limit: 3, Queue: "q1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Jobs(t.Context(), tc.f)
			if err != nil {
				t.Fatalf("Jobs: %v", err)
			}
			want := match(tc.f)
			if len(want) == 0 && len(got) == 0 {
				return
			}
			equal(t, "jobs", got, want)
		})
	}
	t.Run("PagesCoverAllInOrder", func(t *testing.T) {
		var got []store.Job
		f := store.JobFilter{Limit: 5}
		for pages := 0; ; pages++ {
			page, err := s.Jobs(t.Context(), f)
			if err != nil {
				t.Fatalf("Jobs: %v", err)
			}
			if len(page) == 0 {
				break
			}
			if len(page) > f.Limit || pages > len(all) {
				t.Fatalf("page of %d jobs with Limit %d (page %d)", len(page), f.Limit, pages)
			}
			got = append(got, page...)
			f.AfterSeq = page[len(page)-1].Seq
		}
		equal(t, "paged jobs", got, all)
	})
	t.Run("NewestPagesCoverAllInReverse", func(t *testing.T) {
		var got []store.Job
		f := store.JobFilter{Limit: 5, Newest: true}
		for pages := 0; ; pages++ {
			page, err := s.Jobs(t.Context(), f)
			if err != nil {
				t.Fatalf("Jobs: %v", err)
			}
			if len(page) == 0 {
				break
			}
			if len(page) > f.Limit || pages > len(all) {
				t.Fatalf("page of %d jobs with Limit %d (page %d)", len(page), f.Limit, pages)
			}
			got = append(got, page...)
			f.AfterSeq = page[len(page)-1].Seq
		}
		want := slices.Clone(all)
		slices.Reverse(want)
		equal(t, "paged jobs, newest first", got, want)
	})
}

func testCommitUpsertsTasks(t *testing.T, o opener) {
	s := o.store(t)
	mustCreate(t, s, newJob("j", "q", ""), newTasks("j", 2))
	code := 0
	running := store.Task{Job: "j", Name: "t1", Index: 1, State: "running", Attempt: 1, Worker: "w1", Started: t0.Add(time.Second),
		SecretHash: bytes.Repeat([]byte{0xa5}, 32), GPUs: []int{0, 3}}
	mustCommit(t, s, store.Batch{Tasks: []store.Task{running}})
	// A restarted server checks the running attempt's reports against the
	// digest it reads back, and gives it its GPU devices back.
	if _, unfinished, err := s.Unfinished(t.Context()); err != nil || len(unfinished["j"]) != 2 {
		t.Fatalf("Unfinished: %v, %v", unfinished, err)
	} else {
		equal(t, "running task read back by Unfinished", unfinished["j"][1], running)
	}
	done := running
	done.State, done.Ended, done.ExitCode, done.Output = "succeeded", t0.Add(time.Minute), &code, "ok\n"
	done.Result, done.Reason, done.Message = json.RawMessage(`{"n":1}`), "exited", "exit 0"
	done.CPUSeconds, done.PeakMemory = 12.345678, 3<<30+17
	added := store.Task{Job: "j", Name: "t2", Index: 2, State: "blocked"}
	mustCommit(t, s, store.Batch{Tasks: []store.Task{done, added}})

	_, tasks := mustJob(t, s, "j")
	equal(t, "tasks", tasks, []store.Task{newTasks("j", 1)[0], done, added})

	// An upsert replaces every field: a retry clears the previous result
	// and the previous attempt's secret.
	retry := store.Task{Job: "j", Name: "t1", Index: 1, State: "ready", Attempt: 2, Fails: 1}
	mustCommit(t, s, store.Batch{Tasks: []store.Task{retry}})
	_, tasks = mustJob(t, s, "j")
	equal(t, "task after retry", tasks[1], retry)
}

func testCommitUpsertsJobs(t *testing.T, o opener) {
	s := o.store(t)
	a := mustCreate(t, s, newJob("a", "q", ""), nil)
	// A job first stored by Commit gets a Seq after the existing ones.
	b := newJob("b", "q", "")
	mustCommit(t, s, store.Batch{Jobs: []store.Job{b}})
	gotB, _ := mustJob(t, s, "b")
	if gotB.Seq <= a.Seq {
		t.Fatalf("job b stored by Commit: Seq %d, want > %d", gotB.Seq, a.Seq)
	}
	equal(t, "job b", gotB, withSeq(b, gotB.Seq))

	// An update keeps Seq whatever the batch says, and a nil Spec keeps the
	// stored spec.
	upd := a
	upd.Seq, upd.State, upd.Priority, upd.Urgent, upd.Ended, upd.Spec = 0, "cancelled", 9, true, t0.Add(time.Hour), nil
	mustCommit(t, s, store.Batch{Jobs: []store.Job{upd}})
	gotA, _ := mustJob(t, s, "a")
	want := upd
	want.Seq, want.Spec = a.Seq, a.Spec
	equal(t, "job a after update with nil spec", gotA, want)

	upd.Spec = json.RawMessage(`{"v":2}`)
	mustCommit(t, s, store.Batch{Jobs: []store.Job{upd}})
	gotA, _ = mustJob(t, s, "a")
	want.Spec = upd.Spec
	equal(t, "job a after update with new spec", gotA, want)
	if n := len(allJobs(t, s)); n != 2 {
		t.Errorf("jobs stored = %d, want 2", n)
	}
}

func testCommitUpsertsWorkers(t *testing.T, o opener) {
	s := o.store(t)
	w2 := store.Worker{Name: "w2", State: "ready", Registered: t0, LastSeen: t0, Spec: json.RawMessage(`{"slots":2}`)}
	w1 := store.Worker{Name: "w1", State: "ready", Registered: t0, LastSeen: t0, Spec: json.RawMessage(`{"slots":1}`)}
	mustCommit(t, s, store.Batch{Workers: []store.Worker{w2, w1}})
	seen := w1
	seen.State, seen.LastSeen, seen.Spec = "draining", t0.Add(time.Minute), nil
	mustCommit(t, s, store.Batch{Workers: []store.Worker{seen}})

	got, err := s.Workers(t.Context())
	if err != nil {
		t.Fatalf("Workers: %v", err)
	}
	want := seen
	want.Spec = w1.Spec // nil Spec keeps the registration
	equal(t, "workers by name", got, []store.Worker{want, w2})
}

// snapshot is everything a test store holds, to compare before and after.
type snapshot struct {
	Jobs    []store.Job
	Tasks   map[string][]store.Task
	Events  []store.Event
	Workers []store.Worker
	KV      map[string]string
}

func take(t *testing.T, s store.Store, keys ...string) snapshot {
	t.Helper()
	snap := snapshot{Jobs: allJobs(t, s), Tasks: map[string][]store.Task{}, Events: allEvents(t, s), KV: map[string]string{}}
	for _, j := range snap.Jobs {
		_, snap.Tasks[j.ID] = mustJob(t, s, j.ID)
	}
	var err error
	if snap.Workers, err = s.Workers(t.Context()); err != nil {
		t.Fatalf("Workers: %v", err)
	}
	for _, k := range keys {
		v, err := s.KV(t.Context(), k)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Fatalf("KV(%s): %v", k, err)
		default:
			snap.KV[k] = string(v)
		}
	}
	return snap
}

func testCommitAtomic(t *testing.T, o opener) {
	// Every batch holds good rows of every kind and one bad row; whichever
	// order an implementation writes them in, the bad row comes after some
	// good ones, and none of them may be left behind.
	good := func() store.Batch {
		j := newJob("j", "q", "")
		j.State = "running"
		return store.Batch{
			Jobs:    []store.Job{j, newJob("new", "q", "")},
			Tasks:   append(newTasks("new", 3), store.Task{Job: "j", Name: "t0", State: "running", Attempt: 1}),
			Workers: []store.Worker{{Name: "w", State: "ready", LastSeen: t0}},
			Events:  []store.Event{ev("task_started", "j"), ev("job_submitted", "new")},
			KV:      map[string][]byte{"usage/q": []byte("42"), "old": nil},
		}
	}
	for _, tc := range []struct {
		name  string
		spoil func(*store.Batch)
	}{
		{"TaskOfUnknownJob", func(b *store.Batch) { b.Tasks = append(b.Tasks, store.Task{Job: "ghost", Name: "x", State: "ready"}) }},
		{"TaskWithoutName", func(b *store.Batch) { b.Tasks = append(b.Tasks, store.Task{Job: "j", State: "ready"}) }},
		{"TaskOfUnknownJobAmongMany", func(b *store.Batch) {
			// Implementations may write rows in groups; the bad row sits
			// in the middle of one.
			many := newTasks("new", 300)
			many[150].Job = "ghost"
			b.Tasks = append(b.Tasks, many...)
		}},
		{"TaskResultNotJSON", func(b *store.Batch) { b.Tasks[len(b.Tasks)-1].Result = json.RawMessage(`{oops}`) }},
		{"JobWithoutID", func(b *store.Batch) { b.Jobs = append(b.Jobs, store.Job{Queue: "q", State: "pending"}) }},
		{"WorkerWithoutName", func(b *store.Batch) { b.Workers = append(b.Workers, store.Worker{State: "ready"}) }},
		{"EventWithoutKind", func(b *store.Batch) { b.Events = append(b.Events, store.Event{Job: "j"}) }},
		{"EventDataNotJSON", func(b *store.Batch) { b.Events[1].Data = json.RawMessage(`nope`) }},
		{"EmptyKVKey", func(b *store.Batch) { b.KV[""] = []byte("x") }},
		{"TimeOutOfRange", func(b *store.Batch) { b.Events[1].At = time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := o.store(t)
			mustCreate(t, s, newJob("j", "q", ""), newTasks("j", 2), ev("job_submitted", "j"))
			mustCommit(t, s, store.Batch{KV: map[string][]byte{"usage/q": []byte("1"), "old": []byte("x")}})
			before := take(t, s, "usage/q", "old")

			b := good()
			tc.spoil(&b)
			err := s.Commit(t.Context(), b)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Commit: err = %v, want ErrInvalid", err)
			}
			equal(t, "store after a refused batch", take(t, s, "usage/q", "old"), before)

			// The same batch without the bad row goes through.
			mustCommit(t, s, good())
			after := take(t, s, "usage/q", "old")
			if len(after.Jobs) != 2 || len(after.Events) != 3 || after.KV["usage/q"] != "42" {
				t.Errorf("good batch after a refused one not stored: %+v", after)
			}
			if _, ok := after.KV["old"]; ok {
				t.Errorf("nil KV value did not delete the key")
			}
		})
	}
}

func testCommitEmpty(t *testing.T, o opener) {
	s := o.store(t)
	mustCommit(t, s, store.Batch{})
	mustCommit(t, s, store.Batch{KV: map[string][]byte{}})
	if evs := allEvents(t, s); len(evs) != 0 {
		t.Errorf("events after empty batches: %+v", evs)
	}
}

func testCommitLargeBatch(t *testing.T, o opener) {
	s := o.store(t)
	const n = 10_000
	tasks := newTasks("big", n)
	mustCreate(t, s, newJob("big", "q", ""), tasks)
	b := store.Batch{Tasks: make([]store.Task, n), Events: make([]store.Event, n)}
	for i, tk := range tasks {
		tk.State, tk.Attempt, tk.Worker, tk.Started = "running", 1, fmt.Sprintf("w%d", i%97), t0.Add(time.Duration(i))
		b.Tasks[i] = tk
		b.Events[i] = store.Event{At: tk.Started, Kind: "task_started", Job: "big", Task: tk.Name, Worker: tk.Worker}
	}
	mustCommit(t, s, b)
	_, got := mustJob(t, s, "big")
	equal(t, "10,000 tasks after one commit", got, b.Tasks)
	evs := allEvents(t, s)
	if len(evs) != n {
		t.Fatalf("events = %d, want %d", len(evs), n)
	}
	for i, e := range evs {
		if e.Task != b.Tasks[i].Name {
			t.Fatalf("event %d is for task %s, want %s (slice order)", i, e.Task, b.Tasks[i].Name)
		}
	}
}

func testEventsOrderedAndPaged(t *testing.T, o opener) {
	s := o.store(t)
	mustCreate(t, s, newJob("a", "q", ""), nil, ev("job_submitted", "a"))
	var want []store.Event
	for i := range 3 {
		var b store.Batch
		for k := range 4 {
			e := store.Event{
				ID: int64(1000 - i*4 - k), At: t0.Add(time.Duration(i*4 + k)), Kind: "task_started",
				Job: []string{"a", "b"}[k%2], Task: fmt.Sprintf("t%d", i*4+k), Worker: "w", Reason: "r", Message: "m",
				Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i*4+k)),
			}
			b.Events = append(b.Events, e)
			want = append(want, e)
		}
		mustCommit(t, s, b)
	}
	got := allEvents(t, s)[1:] // after job_submitted
	if len(got) != len(want) {
		t.Fatalf("events = %d, want %d", len(got), len(want))
	}
	for i := range got {
		if i > 0 && got[i].ID <= got[i-1].ID {
			t.Fatalf("event IDs not increasing: %d then %d", got[i-1].ID, got[i].ID)
		}
		w := want[i]
		w.ID = got[i].ID // assigned by the store
		equal(t, fmt.Sprintf("event %d", i), got[i], w)
	}

	all := allEvents(t, s)
	for _, tc := range []struct {
		name string
		f    store.EventFilter
	}{
		{"AllPages", store.EventFilter{Limit: 3}},
		{"JobPages", store.EventFilter{Limit: 2, Job: "a"}},
		{"FromMiddle", store.EventFilter{Limit: 4, AfterID: all[5].ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []store.Event
			for _, e := range all {
				if e.ID > tc.f.AfterID && (tc.f.Job == "" || e.Job == tc.f.Job) {
					want = append(want, e)
				}
			}
			var got []store.Event
			f := tc.f
			for len(got) <= len(all) {
				page, err := s.Events(t.Context(), f)
				if err != nil {
					t.Fatalf("Events: %v", err)
				}
				if len(page) == 0 {
					break
				}
				if len(page) > f.Limit {
					t.Fatalf("page of %d events with Limit %d", len(page), f.Limit)
				}
				got = append(got, page...)
				f.AfterID = page[len(page)-1].ID
			}
			equal(t, "paged events", got, want)
		})
	}
}

// A tail is the last Limit events that match, oldest first, as tail(1)
// prints a file's end; Since keeps the events at or after a time.
func testEventsTailAndSince(t *testing.T, o opener) {
	s := o.store(t)
	mustCreate(t, s, newJob("a", "q", ""), nil)
	var b store.Batch
	for i := range 10 {
		b.Events = append(b.Events, store.Event{At: t0.Add(time.Duration(i) * time.Minute), Kind: "task_started",
			Job: []string{"a", "b"}[i%2], Task: fmt.Sprintf("t%d", i)})
	}
	mustCommit(t, s, b)
	tasks := func(f store.EventFilter) string {
		t.Helper()
		evs, err := s.Events(t.Context(), f)
		if err != nil {
			t.Fatalf("Events(%+v): %v", f, err)
		}
		var out []string
		for _, e := range evs {
			out = append(out, e.Task)
		}
		return strings.Join(out, " ")
	}
	all := allEvents(t, s)
	for _, tc := range []struct {
		name string
		f    store.EventFilter
		want string
	}{
		{"Tail", store.EventFilter{Tail: true, Limit: 3}, "t7 t8 t9"},
		{"TailOfAJob", store.EventFilter{Tail: true, Limit: 2, Job: "a"}, "t6 t8"},
		{"TailBeyondTheLog", store.EventFilter{Tail: true, Limit: 50, Job: "b"}, "t1 t3 t5 t7 t9"},
		{"TailAfter", store.EventFilter{Tail: true, Limit: 5, AfterID: all[6].ID}, "t7 t8 t9"},
		{"Since", store.EventFilter{Since: t0.Add(6 * time.Minute)}, "t6 t7 t8 t9"},
		{"SinceWithin", store.EventFilter{Since: t0.Add(6*time.Minute + 1)}, "t7 t8 t9"},
		{"SinceHead", store.EventFilter{Since: t0.Add(2 * time.Minute), Limit: 2}, "t2 t3"},
		{"SinceTail", store.EventFilter{Since: t0.Add(2 * time.Minute), Limit: 2, Tail: true, Job: "a"}, "t6 t8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tasks(tc.f); got != tc.want {
				t.Errorf("Events(%+v) = %s, want %s", tc.f, got, tc.want)
			}
		})
	}
}

func testUnfinished(t *testing.T, o opener) {
	s := o.store(t)
	created := map[string]store.Job{}
	for _, id := range []string{"a", "b", "c", "d"} {
		created[id] = mustCreate(t, s, newJob(id, "q", ""), newTasks(id, 3))
	}
	check := func(wantIDs ...string) {
		t.Helper()
		jobs, tasks, err := s.Unfinished(t.Context())
		if err != nil {
			t.Fatalf("Unfinished: %v", err)
		}
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.ID)
			_, want := mustJob(t, s, j.ID)
			equal(t, "tasks of "+j.ID, tasks[j.ID], want)
		}
		equal(t, "unfinished jobs", ids, wantIDs)
		for id := range tasks {
			if !slices.Contains(ids, id) {
				t.Errorf("tasks returned for job %s, which is not unfinished", id)
			}
		}
	}
	check("a", "b", "c", "d")

	end := func(id, state string) store.Job {
		j := created[id]
		j.State, j.Ended = state, t0.Add(time.Hour)
		return j
	}
	running := created["b"]
	running.State = "running"
	mustCommit(t, s, store.Batch{Jobs: []store.Job{end("a", store.JobSucceeded), running, end("c", store.JobCancelled)}})
	check("b", "d")

	e := mustCreate(t, s, newJob("e", "q", ""), newTasks("e", 1))
	created["e"] = e
	mustCommit(t, s, store.Batch{Jobs: []store.Job{end("b", store.JobFailed)}})
	check("d", "e")

	// A task update alone does not change which jobs are unfinished, but is
	// seen in the tasks returned.
	mustCommit(t, s, store.Batch{Tasks: []store.Task{{Job: "e", Name: "t0", State: "running", Attempt: 1, Worker: "w"}}})
	check("d", "e")
}

func testKV(t *testing.T, o opener) {
	s := o.store(t)
	ctx := t.Context()
	if _, err := s.KV(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("KV(missing): err = %v, want ErrNotFound", err)
	}
	binary := []byte{0, 1, 0xff, 0xfe, '\n', 0}
	mustCommit(t, s, store.Batch{KV: map[string][]byte{"usage": []byte(`{"a":1}`), "bin": binary, "empty": {}}})
	for _, tc := range []struct {
		key  string
		want []byte
	}{
		{"usage", []byte(`{"a":1}`)},
		{"bin", binary},
		{"empty", []byte{}},
	} {
		got, err := s.KV(ctx, tc.key)
		if err != nil {
			t.Fatalf("KV(%s): %v", tc.key, err)
		}
		if !bytes.Equal(got, tc.want) || got == nil {
			t.Errorf("KV(%s) = %q, want %q (non-nil)", tc.key, got, tc.want)
		}
	}
	mustCommit(t, s, store.Batch{KV: map[string][]byte{"usage": []byte(`{"a":2}`), "bin": nil}})
	if got, err := s.KV(ctx, "usage"); err != nil || string(got) != `{"a":2}` {
		t.Errorf("KV(usage) after overwrite = %q, %v", got, err)
	}
	if _, err := s.KV(ctx, "bin"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KV(bin) after nil value: err = %v, want ErrNotFound", err)
	}
	// Deleting a key that is not there is not an error.
	mustCommit(t, s, store.Batch{KV: map[string][]byte{"never": nil}})
}

func testTimes(t *testing.T, o opener) {
	s := o.store(t)
	zone := time.FixedZone("UTC+05:30", 5*3600+1800)
	now := time.Now() // carries a monotonic reading, which is not stored
	times := []struct {
		name string
		at   time.Time
	}{
		{"Nanoseconds", t0},
		{"OtherZone", time.Date(2030, 12, 31, 23, 59, 59, 999999999, zone)},
		{"Monotonic", now},
		{"UnixEpoch", time.Unix(0, 0)},
		{"BeforeEpoch", time.Date(1969, 7, 20, 20, 17, 40, 1, time.UTC)},
		{"Zero", time.Time{}},
	}
	for i, tc := range times {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("j%d", i)
			j := newJob(id, "q", "")
			j.Submitted, j.Ended = tc.at, tc.at
			task := store.Task{Job: id, Name: "t", State: "running", Started: tc.at, Ended: tc.at}
			mustCreate(t, s, j, []store.Task{task})
			mustCommit(t, s, store.Batch{
				Workers: []store.Worker{{Name: id, State: "ready", Registered: tc.at, LastSeen: tc.at}},
				Events:  []store.Event{{At: tc.at, Kind: "tick", Job: id}},
			})
			gotJob, gotTasks := mustJob(t, s, id)
			evs, err := s.Events(t.Context(), store.EventFilter{Job: id})
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events(%s) = %v, %v", id, evs, err)
			}
			ws, err := s.Workers(t.Context())
			if err != nil {
				t.Fatalf("Workers: %v", err)
			}
			i := slices.IndexFunc(ws, func(w store.Worker) bool { return w.Name == id })
			if i < 0 {
				t.Fatalf("worker %s not stored", id)
			}
			for field, got := range map[string]time.Time{
				"job.submitted": gotJob.Submitted, "job.ended": gotJob.Ended,
				"task.started": gotTasks[0].Started, "task.ended": gotTasks[0].Ended,
				"worker.registered": ws[i].Registered, "worker.lastSeen": ws[i].LastSeen, "event.at": evs[0].At,
			} {
				if tc.at.IsZero() {
					if !got.IsZero() {
						t.Errorf("%s = %v, want the zero time", field, got)
					}
					continue
				}
				if !got.Equal(tc.at) || got.Location() != time.UTC || got != got.Round(0) {
					t.Errorf("%s = %v (%v), want %v in UTC without a monotonic reading",
						field, got.Format(time.RFC3339Nano), got.Location(), tc.at.UTC().Format(time.RFC3339Nano))
				}
			}
		})
	}
	t.Run("OutOfRangeIsInvalid", func(t *testing.T) {
		for _, at := range []time.Time{time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)} {
			j := newJob("far", "q", "")
			j.Submitted = at
			if _, err := s.CreateJob(t.Context(), j, nil, nil); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("CreateJob with submitted %v: err = %v, want ErrInvalid", at, err)
			}
		}
	})
}

func testBytes(t *testing.T, o opener) {
	s := o.store(t)
	// Whitespace, key order, escapes and big numbers: a store that parses
	// and re-encodes (PostgreSQL jsonb) changes every one of them.
	docs := []json.RawMessage{
		json.RawMessage(`{"z": 1,   "a": [1, 2.50, 1e3],` + "\n\t" + `"s": "\u00e9é\"\\", "big": 12345678901234567890}`),
		json.RawMessage(` [ ] `),
		json.RawMessage(`null`),
		json.RawMessage(`"just a string"`),
	}
	output := "line 1\r\n\x00binary\xff\xfe tail \u2603\n"
	for i, doc := range docs {
		id := fmt.Sprintf("j%d", i)
		j := newJob(id, "q", "")
		j.Spec = doc
		mustCreate(t, s, j, []store.Task{{Job: id, Name: "t", State: "succeeded", Result: doc, Output: output}})
		mustCommit(t, s, store.Batch{
			Workers: []store.Worker{{Name: id, State: "ready", Spec: doc}},
			Events:  []store.Event{{At: t0, Kind: "tick", Job: id, Data: doc, Message: "naïve ☃"}},
		})
		gotJob, gotTasks := mustJob(t, s, id)
		evs, err := s.Events(t.Context(), store.EventFilter{Job: id})
		if err != nil || len(evs) != 1 {
			t.Fatalf("Events(%s) = %v, %v", id, evs, err)
		}
		ws, err := s.Workers(t.Context())
		if err != nil || len(ws) != i+1 {
			t.Fatalf("Workers = %v, %v", ws, err)
		}
		for field, got := range map[string][]byte{
			"job.spec": gotJob.Spec, "task.result": gotTasks[0].Result, "worker.spec": ws[i].Spec, "event.data": evs[0].Data,
		} {
			if !bytes.Equal(got, doc) {
				t.Errorf("%s = %q, want %q byte for byte", field, got, doc)
			}
		}
		if gotTasks[0].Output != output {
			t.Errorf("task.output = %q, want %q", gotTasks[0].Output, output)
		}
		if evs[0].Message != "naïve ☃" {
			t.Errorf("event.message = %q", evs[0].Message)
		}
	}
	t.Run("NilStaysNil", func(t *testing.T) {
		j := newJob("nil", "q", "")
		j.Spec = nil
		mustCreate(t, s, j, []store.Task{{Job: "nil", Name: "t", State: "ready"}}, store.Event{At: t0, Kind: "tick", Job: "nil"})
		got, tasks := mustJob(t, s, "nil")
		evs, err := s.Events(t.Context(), store.EventFilter{Job: "nil"})
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		if got.Spec != nil || tasks[0].Result != nil || tasks[0].ExitCode != nil || evs[0].Data != nil {
			t.Errorf("nil fields read back non-nil: spec %q result %q exit %v data %q",
				got.Spec, tasks[0].Result, tasks[0].ExitCode, evs[0].Data)
		}
	})
}

func testConcurrentReaders(t *testing.T, o opener) {
	s := o.store(t)
	const (
		batches   = 40
		perBatch  = 5
		taskCount = 20
		readers   = 4
	)
	hot := newJob("hot", "q", "")
	hot.Priority = 0 // batch 0: the tasks' Attempt
	mustCreate(t, s, hot, newTasks("hot", taskCount))
	batchOf := func(e store.Event) int {
		var d struct{ Batch int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Errorf("event data %q: %v", e.Data, err)
		}
		return d.Batch
	}
	// Each batch sets the job's priority and every task's attempt to the
	// batch number and appends perBatch events: a reader must see all of a
	// batch or none of it.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := 1; i <= batches; i++ {
			j := newJob("hot", "q", "")
			j.State, j.Priority = "running", i
			b := store.Batch{Jobs: []store.Job{j}}
			for _, tk := range newTasks("hot", taskCount) {
				tk.Attempt = i
				b.Tasks = append(b.Tasks, tk)
			}
			for k := range perBatch {
				b.Events = append(b.Events, store.Event{At: t0, Kind: "tick", Job: "hot", Data: json.RawMessage(fmt.Sprintf(`{"batch":%d,"k":%d}`, i, k))})
			}
			if err := s.Commit(t.Context(), b); err != nil {
				t.Errorf("Commit batch %d: %v", i, err)
				return
			}
		}
	})
	var reads sync.Map
	for r := range readers {
		wg.Go(func() {
			n := 0
			defer func() { reads.Store(r, n) }()
			for {
				select {
				case <-done:
					return
				default:
				}
				n++
				j, tasks, err := s.Job(t.Context(), "hot")
				if err != nil {
					t.Errorf("Job: %v", err)
					return
				}
				for _, tk := range tasks {
					if tk.Attempt != j.Priority {
						t.Errorf("torn read: job at batch %d, task %s at batch %d", j.Priority, tk.Name, tk.Attempt)
						return
					}
				}
				jobs, byJob, err := s.Unfinished(t.Context())
				if err != nil {
					t.Errorf("Unfinished: %v", err)
					return
				}
				if len(jobs) != 1 || len(byJob["hot"]) != taskCount {
					t.Errorf("Unfinished = %d jobs, %d tasks", len(jobs), len(byJob["hot"]))
					return
				}
				for _, tk := range byJob["hot"] {
					if tk.Attempt != jobs[0].Priority {
						t.Errorf("torn Unfinished: job at batch %d, task %s at batch %d", jobs[0].Priority, tk.Name, tk.Attempt)
						return
					}
				}
				evs, err := s.Events(t.Context(), store.EventFilter{})
				if err != nil {
					t.Errorf("Events: %v", err)
					return
				}
				count := map[int]int{}
				last := 0
				for _, e := range evs {
					b := batchOf(e)
					if b < last {
						t.Errorf("event of batch %d after batch %d", b, last)
						return
					}
					last = b
					count[b]++
				}
				for b := 1; b <= last; b++ {
					if count[b] != perBatch {
						t.Errorf("reader saw %d events of batch %d, want %d (seen up to batch %d)", count[b], b, perBatch, last)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	j, tasks := mustJob(t, s, "hot")
	if j.Priority != batches || tasks[0].Attempt != batches {
		t.Errorf("after all batches: job at %d, task at %d, want %d", j.Priority, tasks[0].Attempt, batches)
	}
	if evs := allEvents(t, s); len(evs) != batches*perBatch {
		t.Errorf("events = %d, want %d", len(evs), batches*perBatch)
	}
	var total int
	reads.Range(func(_, n any) bool { total += n.(int); return true })
	t.Logf("%d reads across %d readers during %d commits", total, readers, batches)
}

func testClose(t *testing.T, o opener) {
	s := o(t)
	mustCreate(t, s, newJob("j", "q", ""), nil)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	for name, call := range map[string]func() error{
		"Job":    func() error { _, _, err := s.Job(ctx, "j"); return err },
		"Jobs":   func() error { _, err := s.Jobs(ctx, store.JobFilter{}); return err },
		"Commit": func() error { return s.Commit(ctx, store.Batch{Events: []store.Event{ev("tick", "")}}) },
		"CreateJob": func() error {
			_, err := s.CreateJob(ctx, newJob("k", "q", ""), nil, nil)
			return err
		},
		"Events": func() error { _, err := s.Events(ctx, store.EventFilter{}); return err },
		"KV":     func() error { _, err := s.KV(ctx, "k"); return err },
		"Tokens": func() error { _, err := s.Tokens(ctx); return err },
		"PutToken": func() error {
			return s.PutToken(ctx, store.Token{ID: "t", Hash: []byte("h"), Role: "admin", Created: t0})
		},
	} {
		err := call()
		if err == nil {
			t.Errorf("%s after Close: no error", name)
		} else if errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after Close: %v; a closed store must not look empty", name, err)
		}
	}
}
