package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
	"github.com/allot-sched/allot/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openURL(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openURL(t, pgtest.URL(t)) })
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// A PostgreSQL store opens through store.Open under both of libpq's
// schemes.
func TestStoreOpenFindsPostgres(t *testing.T) {
	url := pgtest.URL(t)
	ctx := t.Context()
	for i, u := range []string{url, "postgresql" + strings.TrimPrefix(url, "postgres")} {
		st, err := store.Open(ctx, u)
		if err != nil {
			t.Fatalf("store.Open(%q): %v", u, err)
		}
		if i == 0 {
			if err := st.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("v")}}); err != nil {
				t.Fatal(err)
			}
		} else if v, err := st.KV(ctx, "k"); err != nil || string(v) != "v" {
			t.Errorf("store.Open(%q): KV = %q, %v; want the schema written through the first URL", u, v, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	url := pgtest.URL(t)
	s := openURL(t, url)
	if !s.CreatedSchema() {
		t.Error("the first Open on an empty schema did not say it created it")
	}
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

	s = openURL(t, url)
	defer s.Close()
	if s.CreatedSchema() {
		t.Error("a second Open said it created the schema")
	}
	if after := readAll(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", after, before)
	}
	j, err := s.CreateJob(ctx, store.Job{ID: "later", Queue: "q", State: "pending"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if last := before.Jobs[len(before.Jobs)-1].Seq; j.Seq <= last {
		t.Errorf("job created after reopen: Seq %d, want > %d", j.Seq, last)
	}
}

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

func schemaVersions(t *testing.T, url string) []int {
	t.Helper()
	s := openURL(t, url) // any connection of the schema will do
	defer s.Close()
	rows, err := s.pool.Query(t.Context(), `SELECT version FROM schema_version ORDER BY version`)
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

func TestOpenMigratesOnceAndConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	// Servers starting together on a new database: one creates the
	// schema, the others wait for it and find it there.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
	)
	for range 4 {
		wg.Go(func() {
			s, err := Open(context.Background(), url)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			defer s.Close()
			mu.Lock()
			if s.CreatedSchema() {
				created++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if created != 1 {
		t.Errorf("%d of 4 concurrent Opens created the schema, want 1", created)
	}
	want := make([]int, schemaVersion)
	for i := range want {
		want[i] = i + 1
	}
	if got := schemaVersions(t, url); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema_version rows = %v, want %v", got, want)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	url := pgtest.URL(t)
	s := openURL(t, url)
	newer := schemaVersion + 1
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO schema_version (version, name, applied) VALUES ($1, 'from the future', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err := Open(t.Context(), url)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	for _, want := range []string{fmt.Sprintf("schema version %d is newer", newer), fmt.Sprintf("(%d)", schemaVersion), "127.0.0.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := schemaVersions(t, pgtest.URL(t)); len(got) != schemaVersion {
		t.Errorf("a fresh schema has versions %v", got)
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	c := pgtest.Need(t)
	good := pgtest.URL(t)
	nobody := fmt.Sprintf("postgres://allot:s3cret@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", freePortT(t))
	for _, tc := range []struct {
		name, url string
		says      []string
		kind      error
	}{
		{"BadPort", "postgres://allot:s3cret@127.0.0.1:notaport/postgres", []string{"store URL", "port"}, nil},
		{"BadSSLMode", good + "&sslmode=sometimes", []string{"store URL", "sslmode"}, nil},
		{"NothingListens", nobody, []string{"database unreachable"}, store.ErrUnavailable},
		{"NoSuchDatabase", strings.Replace(c.URL, "/postgres?", "/nosuchdb?", 1), []string{"nosuchdb"}, nil},
		{"SynchronousCommitOff", good + "&synchronous_commit=off", []string{"synchronous_commit is off"}, nil},
		{"UnknownSetting", good + "&no_such_setting=1", []string{"no_such_setting"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.Context(), tc.url)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error quotes the password: %v", err)
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("error %v is not %v", err, tc.kind)
			}
		})
	}
}

// freePortT is a loopback port nothing listens on (it did a moment ago).
func freePortT(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://allot:s3cret@db:5432/allot?sslmode=require": "postgres://allot:…@db:5432/allot?sslmode=require",
		"postgres://allot@db/allot":                             "postgres://allot@db/allot",
		"postgres://db/allot?user=a&password=s3cret":            "postgres://db/allot?password=…&user=a",
		"host=db user=allot password=s3cret dbname=allot":       "host=db user=allot password=… dbname=allot",
		"postgres://allot:s3cret@db:notaport/allot":             "postgres://…@db:notaport/allot",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCommitRefusedRowNamesIt(t *testing.T) {
	s := openURL(t, pgtest.URL(t))
	defer s.Close()
	if _, err := s.CreateJob(t.Context(), store.Job{ID: "j", Queue: "q", State: "pending"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	many := make([]store.Task, 129)
	for i := range many {
		many[i] = store.Task{Job: "j", Name: fmt.Sprintf("t%d", i), State: "ready"}
	}
	for _, tc := range []struct {
		name, want string
		spoil      func([]store.Task)
	}{
		{"UnknownJobAlone", "tasks[0] (ghost/t):", func(ts []store.Task) { ts[0] = store.Task{Job: "ghost", Name: "t", State: "ready"} }},
		{"UnknownJobAmongMany", "tasks[70] (ghost/t70):", func(ts []store.Task) { ts[70].Job = "ghost" }},
		{"BadJSON", "tasks[3] (j/t3): result: not valid JSON", func(ts []store.Task) { ts[3].Result = json.RawMessage("{") }},
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

// A batch may name one row twice: the later row wins, as a sequence of
// upserts leaves it, and a nil spec keeps the earlier one.
func TestCommitFoldsRowsOfOneKey(t *testing.T) {
	s := openURL(t, pgtest.URL(t))
	defer s.Close()
	ctx := t.Context()
	spec := json.RawMessage(`{"v":1}`)
	j := store.Job{ID: "j", Queue: "q", State: "pending", Submitted: t0, Spec: spec}
	later := j
	later.State, later.Spec = "running", nil
	w := store.Worker{Name: "w", State: "ready", Spec: spec}
	w2 := w
	w2.State, w2.Spec = "draining", nil
	if err := s.Commit(ctx, store.Batch{
		Jobs: []store.Job{j, later},
		Tasks: []store.Task{{Job: "j", Name: "a", State: "ready"}, {Job: "j", Name: "b", Index: 1, State: "ready"},
			{Job: "j", Name: "a", State: "running", Attempt: 1}},
		Workers: []store.Worker{w, w2},
	}); err != nil {
		t.Fatal(err)
	}
	got, tasks, err := s.Job(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "running" || string(got.Spec) != string(spec) {
		t.Errorf("job = %+v, want running with the first row's spec", got)
	}
	if len(tasks) != 2 || tasks[0].State != "running" || tasks[0].Attempt != 1 || tasks[1].Name != "b" {
		t.Errorf("tasks = %+v, want a running (attempt 1), b ready", tasks)
	}
	ws, err := s.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].State != "draining" || string(ws[0].Spec) != string(spec) {
		t.Errorf("workers = %+v, %v; want w draining with its spec", ws, err)
	}
}

// A fenced store writes nothing once the leader row holds another epoch:
// not a commit, a job, a token or a revocation.
func TestFencedStoreWritesNothing(t *testing.T) {
	s := openURL(t, pgtest.URL(t))
	defer s.Close()
	ctx := t.Context()
	setEpoch := func(e int64) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, `INSERT INTO leader (epoch, holder, url, since) VALUES ($1, 'test', '', 0)
			ON CONFLICT (id) DO UPDATE SET epoch = excluded.epoch`, e); err != nil {
			t.Fatal(err)
		}
	}
	tok := store.Token{ID: "tok", Hash: []byte{1}, Role: "admin", Created: t0}
	if err := s.PutToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	s.Fence(1)
	writes := map[string]func() error{
		"Commit": func() error { return s.Commit(ctx, store.Batch{Events: []store.Event{{At: t0, Kind: "tick"}}}) },
		"CreateJob": func() error {
			_, err := s.CreateJob(ctx, store.Job{ID: "j", Queue: "q", State: "pending"}, nil, nil)
			return err
		},
		"PutToken": func() error {
			return s.PutToken(ctx, store.Token{ID: "tok2", Hash: []byte{2}, Role: "admin", Created: t0})
		},
		"RevokeToken": func() error { _, err := s.RevokeToken(ctx, "tok", t0); return err },
	}
	for _, epoch := range []int64{0, 2} { // no leader row yet, then another leader's
		if epoch != 0 {
			setEpoch(epoch)
		}
		for name, write := range writes {
			if err := write(); !errors.Is(err, store.ErrFenced) {
				t.Errorf("leader epoch %d, store fenced at 1: %s = %v, want ErrFenced", epoch, name, err)
			}
		}
	}
	if evs, _ := s.Events(ctx, store.EventFilter{}); len(evs) != 0 {
		t.Errorf("a fenced store wrote events: %+v", evs)
	}
	if toks, _ := s.Tokens(ctx); len(toks) != 1 || !toks[0].Revoked.IsZero() {
		t.Errorf("a fenced store changed the tokens: %+v", toks)
	}
	s.Fence(2)
	for name, write := range writes {
		if err := write(); err != nil {
			t.Errorf("at the leader's epoch: %s = %v", name, err)
		}
	}
}

// Of several servers bootstrapping a new database at once, one stores the
// first token.
func TestPutFirstTokenStoresExactlyOne(t *testing.T) {
	url := pgtest.URL(t)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		stored []string
	)
	for i := range 4 {
		s := openURL(t, url)
		defer s.Close()
		wg.Go(func() {
			id := fmt.Sprintf("tok-%d", i)
			ok, err := s.PutFirstToken(context.Background(), store.Token{ID: id, Hash: []byte(id), Role: "admin", Created: t0})
			if err != nil {
				t.Errorf("PutFirstToken: %v", err)
			}
			if ok {
				mu.Lock()
				stored = append(stored, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s := openURL(t, url)
	defer s.Close()
	toks, err := s.Tokens(t.Context())
	if err != nil || len(stored) != 1 || len(toks) != 1 || toks[0].ID != stored[0] {
		t.Errorf("stored %v; tokens %+v, %v; want exactly one", stored, toks, err)
	}
}

// One server leads a database: a second is refused, naming the first,
// until the first's lock is gone; the new leader's epoch fences the old
// one, which then writes nothing more.
func TestLeadIsExclusiveAndFencesTheFormerLeader(t *testing.T) {
	url := pgtest.URL(t)
	ctx := t.Context()
	first, second := openURL(t, url), openURL(t, url)
	defer first.Close()
	defer second.Close()
	if err := first.Lead(ctx, "server one"); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("1")}}); err != nil {
		t.Fatalf("the leader's commit: %v", err)
	}
	err := second.Lead(ctx, "server two")
	if !errors.Is(err, ErrLeaderElsewhere) || !strings.Contains(err.Error(), "server one") {
		t.Fatalf("a second Lead: %v, want ErrLeaderElsewhere naming server one", err)
	}
	// The first server's lock session is lost (a cut connection): the
	// second takes over, and the first is fenced.
	first.releaseLead()
	if err := second.Lead(ctx, "server two"); err != nil {
		t.Fatalf("Lead once the lock is free: %v", err)
	}
	if second.Epoch() != first.Epoch()+1 {
		t.Errorf("epochs %d then %d, want the next", first.Epoch(), second.Epoch())
	}
	if err := first.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("stale")}}); !errors.Is(err, store.ErrFenced) {
		t.Errorf("the former leader's commit: %v, want ErrFenced", err)
	}
	if err := second.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("2")}}); err != nil {
		t.Fatalf("the new leader's commit: %v", err)
	}
	if v, _ := second.KV(ctx, "k"); string(v) != "2" {
		t.Errorf("k = %q, want the new leader's 2", v)
	}
	// Closing a leader frees the lock.
	second.Close()
	third := openURL(t, url)
	defer third.Close()
	if err := third.Lead(ctx, "server three"); err != nil {
		t.Errorf("Lead after the leader closed: %v", err)
	}
}
