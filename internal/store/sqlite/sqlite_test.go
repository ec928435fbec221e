package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/storetest"
)

func openFile(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func tempPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "allot.db")
}

func TestStoreSuiteOnFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFile(t, tempPath(t)) })
}

func TestStoreSuiteInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFile(t, Memory) })
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// everything reads back all a store holds.
type everything struct {
	Jobs    []store.Job
	Tasks   map[string][]store.Task
	Events  []store.Event
	Workers []store.Worker
	KV      string
}

func readAll(t *testing.T, s store.Store) everything {
	t.Helper()
	ctx := t.Context()
	var (
		e   everything
		err error
	)
	if e.Jobs, err = s.Jobs(ctx, store.JobFilter{}); err != nil {
		t.Fatal(err)
	}
	e.Tasks = map[string][]store.Task{}
	for _, j := range e.Jobs {
		if _, e.Tasks[j.ID], err = s.Job(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if e.Events, err = s.Events(ctx, store.EventFilter{}); err != nil {
		t.Fatal(err)
	}
	if e.Workers, err = s.Workers(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := s.KV(ctx, "usage")
	if err != nil {
		t.Fatal(err)
	}
	e.KV = string(v)
	return e
}

func TestReopenKeepsEverything(t *testing.T) {
	path := tempPath(t)
	s := openFile(t, path)
	ctx := t.Context()
	code := 1
	for i := range 3 {
		id := fmt.Sprintf("job-%d", i)
		tasks := []store.Task{{Job: id, Name: "a", State: "ready"}, {Job: id, Name: "b", Index: 1, State: "blocked"}}
		if _, err := s.CreateJob(ctx, store.Job{ID: id, Queue: "q", State: "pending", Submitted: t0, Spec: json.RawMessage(`{"i": ` + strconv.Itoa(i) + `}`)},
			tasks, []store.Event{{At: t0, Kind: "job_submitted", Job: id}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, store.Batch{
		Jobs:    []store.Job{{ID: "job-1", Queue: "q", State: "failed", Submitted: t0, Ended: t0.Add(time.Hour)}},
		Tasks:   []store.Task{{Job: "job-1", Name: "a", State: "failed", Attempt: 3, Fails: 3, ExitCode: &code, Output: "boom"}},
		Workers: []store.Worker{{Name: "w", State: "ready", Registered: t0, LastSeen: t0, Spec: json.RawMessage(`{}`)}},
		Events:  []store.Event{{At: t0, Kind: "job_failed", Job: "job-1", Reason: "task_failed"}},
		KV:      map[string][]byte{"usage": []byte(`{"a":1}`)},
	}); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openFile(t, path)
	defer s.Close()
	after := readAll(t, s)
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", after, before)
	}
	// Submission order goes on after the last job, never reusing a Seq.
	j, err := s.CreateJob(ctx, store.Job{ID: "later", Queue: "q", State: "pending"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if last := before.Jobs[len(before.Jobs)-1].Seq; j.Seq <= last {
		t.Errorf("job created after reopen: Seq %d, want > %d", j.Seq, last)
	}
}

func schemaVersions(t *testing.T, path string) []int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT version FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestOpenMigratesEmptyFile(t *testing.T) {
	path := tempPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openFile(t, path)
	if _, err := s.CreateJob(t.Context(), store.Job{ID: "j", Queue: "q", State: "pending"}, nil, nil); err != nil {
		t.Fatalf("CreateJob on a migrated file: %v", err)
	}
	s.Close()
	want := make([]int, schemaVersion)
	for i := range want {
		want[i] = i + 1
	}
	if got := schemaVersions(t, path); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema_version rows = %v, want %v", got, want)
	}
	// Opening an up-to-date file applies nothing again.
	openFile(t, path).Close()
	if got := schemaVersions(t, path); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema_version rows after a second Open = %v, want %v", got, want)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := tempPath(t)
	openFile(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	newer := schemaVersion + 1
	if _, err := db.Exec(`INSERT INTO schema_version (version, name, applied) VALUES (?, 'from the future', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	for _, want := range []string{path, fmt.Sprintf("schema version %d is newer", newer), fmt.Sprintf("(%d)", schemaVersion)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := schemaVersions(t, path); got[len(got)-1] != newer {
		t.Errorf("refused Open changed schema_version: %v", got)
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", filepath.Join(dir, "what?.db"), garbage, filepath.Join(dir, "missing-dir", "x.db")} {
		if s, err := Open(path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
}

func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestDurabilityPragmasInEffect(t *testing.T) {
	s := openFile(t, tempPath(t))
	defer s.Close()
	for _, tc := range []struct {
		db         *sql.DB
		name, want string
	}{
		{s.writer, "journal_mode", "wal"},
		{s.writer, "synchronous", "2"}, // FULL
		{s.writer, "foreign_keys", "1"},
		{s.writer, "busy_timeout", "10000"},
		{s.writer, "cache_size", "-65536"},
		{s.writer, "journal_size_limit", "67108864"},
		{s.writer, "temp_store", "2"}, // MEMORY: statement journals never spill to a file
		{s.readers, "journal_mode", "wal"},
		{s.readers, "query_only", "1"},
		{s.readers, "busy_timeout", "10000"},
	} {
		who := "writer"
		if tc.db == s.readers {
			who = "reader"
		}
		if got := pragma(t, tc.db, tc.name); got != tc.want {
			t.Errorf("%s: PRAGMA %s = %s, want %s", who, tc.name, got, tc.want)
		}
	}
	if n := s.writer.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("writer pool allows %d connections, want 1", n)
	}
	if _, err := s.readers.Exec(`INSERT INTO kv (key, value) VALUES ('x', x'00')`); err == nil {
		t.Error("a reader connection could write")
	}
}

// TestReaderDoesNotBlockWriter holds a read transaction open (as a slow API
// request would) while the writer commits: WAL lets the commit go through at
// once, and the reader keeps its snapshot.
func TestReaderDoesNotBlockWriter(t *testing.T) {
	s := openFile(t, tempPath(t))
	defer s.Close()
	ctx := t.Context()
	event := store.Batch{Events: []store.Event{{At: t0, Kind: "tick"}}}
	if err := s.Commit(ctx, event); err != nil {
		t.Fatal(err)
	}
	count := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if n := count(tx); n != 1 {
		t.Fatalf("reader sees %d events, want 1", n)
	}

	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	for range 3 {
		if err := s.Commit(wctx, event); err != nil {
			t.Fatalf("Commit while a read transaction is open: %v (after %v)", err, time.Since(start))
		}
	}
	if n := count(tx); n != 1 {
		t.Errorf("open read transaction sees %d events, want its snapshot of 1", n)
	}
	tx.Rollback()
	if n := count(s.readers); n != 4 {
		t.Errorf("new read sees %d events, want 4", n)
	}
}

func TestQueriesUseIndexes(t *testing.T) {
	s := openFile(t, tempPath(t))
	defer s.Close()
	for _, tc := range []struct {
		query string
		args  []any
		index string
	}{
		{`SELECT ` + jobCols + ` FROM jobs WHERE ` + unfinishedWhere + ` ORDER BY seq`, nil, "jobs_unfinished"},
		{`SELECT ` + prefixed("t.", taskColumns) + ` FROM jobs j JOIN tasks t ON t.job = j.id WHERE j.` + unfinishedWhere + ` ORDER BY j.seq, t.idx, t.name`, nil, "jobs_unfinished"},
		{`SELECT ` + prefixed("t.", taskColumns) + ` FROM jobs j JOIN tasks t ON t.job = j.id WHERE j.` + unfinishedWhere + ` ORDER BY j.seq, t.idx, t.name`, nil, "tasks_job"},
		{`SELECT ` + taskCols + ` FROM tasks WHERE job = ? ORDER BY idx, name`, []any{"j"}, "tasks_job"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > ? AND queue = ? ORDER BY seq LIMIT ?`, []any{0, "q", 10}, "jobs_queue"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > ? AND share = ? ORDER BY seq LIMIT ?`, []any{0, "s", 10}, "jobs_share"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > ? AND state IN (?) ORDER BY seq LIMIT ?`, []any{0, "running", 10}, "jobs_state"},
		{`SELECT ` + eventCols + ` FROM events WHERE id > ? AND job = ? ORDER BY id LIMIT ?`, []any{0, "j", 10}, "events_job"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq < ? AND queue = ? ORDER BY seq DESC LIMIT ?`, []any{10, "q", 10}, "jobs_queue"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq < ? AND state IN (?) ORDER BY seq DESC LIMIT ?`, []any{10, "running", 10}, "jobs_state"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq < ? AND submitter = ? ORDER BY seq DESC LIMIT ?`, []any{10, "ann", 10}, "jobs_submitter"},
		{`SELECT ` + attemptCols + ` FROM attempts WHERE 1 = 1 AND ended > ? AND started < ? ORDER BY ended, job, task, attempt`, []any{0, 10}, "attempts_ended"},
		{`SELECT ` + attemptCols + ` FROM attempts WHERE 1 = 1 AND job = ? ORDER BY ended, job, task, attempt`, []any{"j"}, "PRIMARY KEY"},
		{`SELECT off, data FROM output_chunks WHERE job = ? AND task = ? AND attempt = ? AND off + length(data) > ? ORDER BY off`, []any{"j", "t", 1, 0}, "sqlite_autoindex_output_chunks_1"},
	} {
		rows, err := s.readers.Query(`EXPLAIN QUERY PLAN `+tc.query, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if !strings.Contains(strings.Join(plan, "\n"), tc.index) {
			t.Errorf("plan for %.60q… does not use %s:\n%s", tc.query, tc.index, strings.Join(plan, "\n"))
		}
	}
}

// crashDBEnv names the database the committer subprocess writes to.
const crashDBEnv = "ALLOT_SQLITE_CRASH_DB"

// TestCommitter is not a test on its own: TestAcknowledgedCommitsSurviveKill
// runs the test binary with crashDBEnv set, and this commits batches until
// it is killed, printing "ack N" after Commit N returns.
func TestCommitter(t *testing.T) {
	path := os.Getenv(crashDBEnv)
	if path == "" {
		t.Skip("run by TestAcknowledgedCommitsSurviveKill")
	}
	s, err := Open(path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 1; ; i++ {
		b := store.Batch{KV: map[string][]byte{"last": []byte(strconv.Itoa(i))}}
		for k := range 20 {
			b.Events = append(b.Events, store.Event{At: time.Now(), Kind: "tick", Data: json.RawMessage(fmt.Sprintf(`{"batch":%d,"k":%d}`, i, k))})
		}
		if err := s.Commit(context.Background(), b); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("ack %d\n", i)
	}
}

// TestAcknowledgedCommitsSurviveKill kills a process that is committing
// with SIGKILL and checks that every commit it acknowledged is in the file,
// whole, and that no commit is there in part. (Power loss cannot be staged
// in a test; synchronous=FULL is what covers it, checked above.)
func TestAcknowledgedCommitsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	path := tempPath(t)
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCommitter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDBEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := 0
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			line := lines.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatalf("committer: %s", line)
			}
			if n, ok := strings.CutPrefix(line, "ack "); ok {
				acked, _ = strconv.Atoi(n)
			}
			if acked >= 30+round*17 { // kill at a different point each round
				break
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if acked == 0 {
			t.Fatal("committer acknowledged nothing")
		}

		s := openFile(t, path)
		evs, err := s.Events(t.Context(), store.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		last, err := s.KV(t.Context(), "last")
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		lastBatch, _ := strconv.Atoi(string(last))
		if lastBatch < acked {
			t.Fatalf("round %d: last stored batch %d, but batch %d was acknowledged", round, lastBatch, acked)
		}
		// Each round starts counting batches at 1 again; every batch in the
		// file is whole (20 events) and batches are in order.
		perBatch := map[[2]int]int{}
		r, prev := 0, 0
		for _, e := range evs {
			var d struct{ Batch int }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Batch < prev {
				r++
			}
			prev = d.Batch
			perBatch[[2]int{r, d.Batch}]++
		}
		if r != round {
			t.Fatalf("found %d runs of the committer in the file, want %d", r+1, round+1)
		}
		thisRound := 0
		for key, n := range perBatch {
			if n != 20 {
				t.Errorf("round %d batch %d has %d of its 20 events", key[0], key[1], n)
			}
			if key[0] == round {
				thisRound++
			}
		}
		if thisRound < acked {
			t.Errorf("round %d: %d batches stored, fewer than the %d acknowledged", round, thisRound, acked)
		}
		t.Logf("round %d: killed after %d acknowledged commits; %d in the file", round, acked, thisRound)
	}
}

func TestCommitRefusedRowNamesIt(t *testing.T) {
	s := openFile(t, Memory)
	defer s.Close()
	if _, err := s.CreateJob(t.Context(), store.Job{ID: "j", Queue: "q", State: "pending"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Rows 0-63 and 64-127 are written as chunks of 64, 128-135 as a
	// chunk of 8, 136-138 alone.
	many := make([]store.Task, 2*chunkRows[0]+chunkRows[1]+3)
	for i := range many {
		many[i] = store.Task{Job: "j", Name: fmt.Sprintf("t%d", i), State: "ready"}
	}
	for _, tc := range []struct {
		name, want string
		spoil      func([]store.Task)
	}{
		{"UnknownJobAlone", "tasks[0] (ghost/t):", func(ts []store.Task) { ts[0] = store.Task{Job: "ghost", Name: "t", State: "ready"} }},
		{"UnknownJobInChunk", "tasks[70] (ghost/t70):", func(ts []store.Task) { ts[70].Job = "ghost" }},
		{"UnknownJobInSmallChunk", "tasks[130] (ghost/t130):", func(ts []store.Task) { ts[130].Job = "ghost" }},
		{"UnknownJobAfterChunks", "tasks[137] (ghost/t137):", func(ts []store.Task) { ts[137].Job = "ghost" }},
		{"BadJSONInChunk", "tasks[3] (j/t3): result: not valid JSON", func(ts []store.Task) { ts[3].Result = json.RawMessage("{") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := slices.Clone(many)
			tc.spoil(ts)
			err := s.Commit(t.Context(), store.Batch{Tasks: ts})
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid naming %q", err, tc.want)
			}
			if strings.Contains(tc.name, "UnknownJob") && !strings.Contains(err.Error(), "job is not stored") {
				t.Errorf("err = %v, want it to say the job is not stored", err)
			}
			if _, tasks, err := s.Job(t.Context(), "j"); err != nil || len(tasks) != 0 {
				t.Errorf("after the refused commit: %d tasks stored (%v)", len(tasks), err)
			}
		})
	}
}

// A token row whose scope or limits cannot be read back does not stop the
// listing (and with it the server's start): it is listed, marked
// unreadable, with no scope, so that it authorises nothing.
func TestUnreadableTokenRowIsListedNotFatal(t *testing.T) {
	s := openFile(t, tempPath(t))
	ctx := t.Context()
	good := store.Token{ID: "tok-good", Hash: []byte{1}, Role: "admin", Created: time.Unix(1, 0)}
	bad := store.Token{ID: "tok-bad", Hash: []byte{2}, Role: "submitter", Queues: []string{"q"}, Created: time.Unix(2, 0)}
	for _, tok := range []store.Token{good, bad} {
		if err := s.PutToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	for _, col := range []string{"shares", "limits"} {
		if _, err := s.writer.ExecContext(ctx, `UPDATE tokens SET `+col+` = ? WHERE id = 'tok-bad'`, []byte("{not json")); err != nil {
			t.Fatal(err)
		}
		toks, err := s.Tokens(ctx)
		if err != nil {
			t.Fatalf("%s: Tokens = %v, want the list", col, err)
		}
		if len(toks) != 2 || toks[0].Unreadable != "" || toks[1].Unreadable == "" || toks[1].Queues != nil {
			t.Fatalf("%s: tokens %+v, want tok-bad marked unreadable without scope", col, toks)
		}
		byHash, err := s.TokenByHash(ctx, []byte{2})
		if err != nil || byHash.Unreadable == "" {
			t.Fatalf("%s: TokenByHash = %+v, %v; want it marked unreadable", col, byHash, err)
		}
	}
}
