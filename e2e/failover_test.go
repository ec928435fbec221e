package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

// leaderTimeout is the replicas' --leader-timeout in the failover test.
const leaderTimeout = 2 * time.Second

// replicaSet is three allot server processes on one PostgreSQL schema.
type replicaSet struct {
	t     *testing.T
	store string
	addrs []string
	dirs  []string
	procs []*exec.Cmd
	// promoting receives a replica's index when it logs that it took the
	// leader lock, before its engine is rebuilt.
	promoting chan int
}

// promotionWatch passes a replica's log on and reports its promotions.
type promotionWatch struct {
	next io.Writer
	i    int
	ch   chan int
}

func (w promotionWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("took the leader lock")) {
		select {
		case w.ch <- w.i:
		default:
		}
	}
	return w.next.Write(p)
}

func (rs *replicaSet) start(i int) {
	rs.t.Helper()
	cmd := exec.Command(bin, "server", "--listen", rs.addrs[i], "--data-dir", rs.dirs[i], "--store", rs.store,
		"--leader-timeout", leaderTimeout.String(), "--heartbeat-timeout", "20s")
	cmd.Stderr = promotionWatch{next: logWriter(rs.t, fmt.Sprintf("replica%d", i)), i: i, ch: rs.promoting}
	if err := cmd.Start(); err != nil {
		rs.t.Fatal(err)
	}
	rs.procs[i] = cmd
}

func (rs *replicaSet) urls() string {
	var u []string
	for _, a := range rs.addrs {
		u = append(u, "http://"+a)
	}
	return strings.Join(u, ",")
}

// leader returns the index of the replica that serves the API as the
// leader now, or -1.
func (rs *replicaSet) leader() int {
	hc := &http.Client{Timeout: 300 * time.Millisecond, Transport: adminTransport{}}
	for i, a := range rs.addrs {
		if rs.procs[i] == nil {
			continue
		}
		resp, err := hc.Get("http://" + a + "/v1/workers")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return i
			}
		}
	}
	return -1
}

// waitLeader waits for a leader other than not and returns it and when it
// was first seen.
func (rs *replicaSet) waitLeader(not int, within time.Duration) (int, time.Time) {
	rs.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if l := rs.leader(); l >= 0 && l != not {
			return l, time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	rs.t.Fatalf("no new leader within %s", within)
	return -1, time.Time{}
}

func (rs *replicaSet) stop() {
	for _, p := range rs.procs {
		if p != nil && p.Process != nil {
			_ = p.Process.Signal(syscall.SIGCONT)
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
}

// Three replicas on one PostgreSQL, a real worker and a stream of
// submissions through a client that knows every replica; the leader is
// killed twice, frozen once past the leader timeout, cut from the
// database once (its lock's session ended), and killed once more with
// its successor killed in its promotion. What the clients
// saw must hold: every acknowledged job is stored and ends, every task
// ends exactly once, no event a stream delivered disappears, and a standby
// leads soon after each fault.
func TestFailoverOfThreeReplicasLosesNothing(t *testing.T) {
	pg := pgtest.Need(t)
	schema, err := pg.Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rs := &replicaSet{t: t, store: schema, procs: make([]*exec.Cmd, 3), promoting: make(chan int, 16)}
	for range 3 {
		rs.addrs = append(rs.addrs, freePort(t))
		rs.dirs = append(rs.dirs, t.TempDir())
	}
	t.Cleanup(rs.stop)
	rs.start(0)
	waitUntil(t, "the first replica to write the admin token", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(rs.dirs[0], "admin.token"))
		return err == nil
	})
	raw, _ := os.ReadFile(filepath.Join(rs.dirs[0], "admin.token"))
	admin := strings.TrimSpace(string(raw))
	for _, a := range rs.addrs {
		admins.Store(a, admin)
	}
	rs.waitLeader(-1, 20*time.Second)
	// Every write transaction of a leader checks its epoch (allot_fence):
	// the same check, which also logs the epoch of each write in commit
	// order, tells whether a write of an old epoch ever followed one of a
	// newer epoch.
	if err := pg.Exec(context.Background(), schema, `CREATE TABLE fence_log (seq bigserial PRIMARY KEY, epoch bigint NOT NULL)`,
		`CREATE OR REPLACE FUNCTION allot_fence(want bigint) RETURNS void LANGUAGE plpgsql AS $$
		DECLARE have bigint;
		BEGIN
			SELECT epoch INTO have FROM leader WHERE id = 1 FOR SHARE;
			IF have IS DISTINCT FROM want THEN
				RAISE EXCEPTION 'the leader epoch is %, this server writes for epoch %', have, want USING ERRCODE = 'AL001';
			END IF;
			INSERT INTO fence_log (epoch) VALUES (want);
		END $$`); err != nil {
		t.Fatal(err)
	}
	rs.start(1)
	rs.start(2)

	c := &cluster{t: t, url: rs.urls(), dataDir: rs.dirs[0], stateDirs: t.TempDir(), admin: admin}
	t.Cleanup(c.stop)
	out, err := c.cli("tokens", "create", "--role", "worker", "--worker", "*", "--name", "e2e workers", "-q")
	if err != nil {
		t.Fatalf("creating the worker token: %v\n%s", err, out)
	}
	c.workerToken = strings.TrimSpace(out)
	crashWorker(c, "w1", 8)

	cl, err := client.New(rs.urls(), client.WithToken(admin))
	if err != nil {
		t.Fatal(err)
	}
	// The stream of submissions: each job has the client's ID, and is sent
	// again until acknowledged (idempotent).
	var (
		mu    sync.Mutex
		acked []string
	)
	ctx, stopSubmitting := context.WithCancel(context.Background())
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		for n := 0; ctx.Err() == nil; n++ {
			id := fmt.Sprintf("fo-%04d", n)
			doc := fmt.Sprintf(`{"id": %q, "tasks": [{"name": "a", "command": ["sh", "-c", %q]}, {"name": "b", "needs": ["a"], "command": ["sh", "-c", %q]}]}`,
				id, "sleep 0.5; "+publish, publish)
			for try := 0; try < 100 && ctx.Err() == nil; try++ {
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := cl.SubmitJob(sctx, []byte(doc), "application/json")
				cancel()
				if err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					break
				}
				if try == 0 || try%20 == 19 {
					t.Logf("submit %s (try %d): %v", id, try, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()

	// A reader of the event stream through the same client: every event
	// it was delivered must be in the log at the end, as delivered.
	var (
		streamMu  sync.Mutex
		delivered []api.Event
	)
	streamCtx, stopStream := context.WithCancel(context.Background())
	streamDone := make(chan error, 1)
	go func() {
		sc, err := client.New(rs.urls(), client.WithToken(admin))
		if err != nil {
			streamDone <- err
			return
		}
		streamDone <- sc.FollowEvents(streamCtx, 0, "", func(e api.Event) error {
			streamMu.Lock()
			delivered = append(delivered, e)
			streamMu.Unlock()
			return nil
		})
	}()

	var killGaps, freezeGaps, cutGaps, recoveringGaps []time.Duration
	// The faults, in order, for the time from each to the first task a
	// new leader starts.
	type faultAt struct {
		kind string
		at   time.Time
	}
	var faults []faultAt
	for round := range 5 {
		time.Sleep(1500 * time.Millisecond)
		old := rs.leader()
		if old < 0 {
			old, _ = rs.waitLeader(-1, 10*time.Second)
		}
		p := rs.procs[old]
		if round < 2 {
			fault := time.Now()
			faults = append(faults, faultAt{"kill -9", fault})
			_ = p.Process.Kill()
			_ = p.Wait()
			rs.procs[old] = nil
			_, seen := rs.waitLeader(old, 10*time.Second)
			killGaps = append(killGaps, seen.Sub(fault))
			rs.start(old) // back as a standby
			continue
		}
		if round == 4 {
			// The leader killed, then the replica that takes its place
			// killed as soon as it says it took the lock (while it
			// rebuilds its engine): the third leads.
			for len(rs.promoting) > 0 {
				<-rs.promoting
			}
			fault := time.Now()
			faults = append(faults, faultAt{"kill -9, then its successor", fault})
			_ = p.Process.Kill()
			_ = p.Wait()
			rs.procs[old] = nil
			var next int
			select {
			case next = <-rs.promoting:
			case <-time.After(10 * time.Second):
				t.Fatal("no replica took the lock after the leader was killed")
			}
			_ = rs.procs[next].Process.Kill()
			_ = rs.procs[next].Wait()
			rs.procs[next] = nil
			l, seen := rs.waitLeader(-1, 10*time.Second)
			if l == old || l == next {
				t.Fatalf("replica %d leads, killed", l)
			}
			recoveringGaps = append(recoveringGaps, seen.Sub(fault))
			rs.start(old)
			rs.start(next)
			continue
		}
		if round == 3 {
			// The leader cut from PostgreSQL: its lock's session ended
			// under it, the process alive and unaware.
			fault := time.Now()
			faults = append(faults, faultAt{"cut", fault})
			if err := pg.Exec(context.Background(), schema,
				`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted`); err != nil {
				t.Fatal(err)
			}
			_, seen := rs.waitLeader(old, 10*time.Second)
			cutGaps = append(cutGaps, seen.Sub(fault))
			continue
		}
		_ = p.Process.Signal(syscall.SIGSTOP)
		fault := time.Now()
		faults = append(faults, faultAt{"SIGSTOP", fault})
		l, seen := rs.waitLeader(old, leaderTimeout+10*time.Second)
		freezeGaps = append(freezeGaps, seen.Sub(fault))
		// The old leader stays frozen: its connections stay open and
		// silent. The worker must notice, and register with the new
		// leader within 5 s of it taking over, keeping its tasks.
		if d := rs.workerBack(l, "w1", fault, 10*time.Second); d.IsZero() {
			t.Errorf("the worker did not register with the new leader within 10 s while the old one stayed frozen")
		} else {
			t.Logf("the worker registered with the new leader %v after it took over", d.Sub(seen).Round(time.Millisecond))
			if d.Sub(seen) > 5*time.Second {
				t.Errorf("the worker registered with the new leader %v after it took over, want within 5 s", d.Sub(seen))
			}
		}
		_ = p.Process.Signal(syscall.SIGCONT)
		// The old leader resumes unconfirmed: it must not serve.
		hc := &http.Client{Timeout: 2 * time.Second, Transport: adminTransport{}}
		if resp, err := hc.Get("http://" + rs.addrs[old] + "/v1/workers"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				t.Errorf("the frozen leader served as the leader again after it resumed")
			}
		}
	}
	time.Sleep(time.Second)
	stopSubmitting()
	<-submitted
	t.Logf("failover after kill -9: %v; after SIGSTOP past the %s timeout: %v; after the leader's lock session was ended: %v; "+
		"after the leader and then its successor in its promotion were killed: %v", killGaps, leaderTimeout, freezeGaps, cutGaps, recoveringGaps)
	for _, g := range recoveringGaps {
		if g > 3*time.Second {
			t.Errorf("a new leader served %s after the leader and its successor were killed", g)
		}
	}
	for _, g := range cutGaps {
		if g > 3*time.Second {
			t.Errorf("a new leader served %s after the leader was cut from the database", g)
		}
	}
	for _, g := range killGaps {
		if g > 3*time.Second {
			t.Errorf("a new leader served %s after kill -9 of the leader", g)
		}
	}
	for _, g := range freezeGaps {
		if g > leaderTimeout+3*time.Second {
			t.Errorf("a new leader served %s after the leader froze", g)
		}
	}
	mu.Lock()
	ids := slices.Clone(acked)
	mu.Unlock()
	if len(ids) < 20 {
		t.Fatalf("only %d jobs acknowledged", len(ids))
	}
	// No write of an old epoch after a write of a newer one.
	conn, err := pgx.Connect(context.Background(), schema)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var epochs []int64
	rows, err := conn.Query(context.Background(), `SELECT epoch FROM fence_log ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e int64
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, e)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	distinct := 0
	for i, e := range epochs {
		if i == 0 || e != epochs[i-1] {
			distinct++
		}
		if i > 0 && e < epochs[i-1] {
			t.Errorf("write %d of the log is of epoch %d, after a write of epoch %d", i, e, epochs[i-1])
		}
	}
	t.Logf("%d fenced writes in %d epochs, in epoch order", len(epochs), distinct)
	if distinct < 6 {
		t.Errorf("writes of %d epochs, want one for each of the 6 leaders that finished their promotion at least", distinct)
	}
	// What follows asks the leader now.
	l, _ := rs.waitLeader(-1, 10*time.Second)
	c.url = "http://" + rs.addrs[l]
	// No event a stream delivered disappears, or changes.
	time.Sleep(1500 * time.Millisecond)
	stopStream()
	if err := <-streamDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("the event stream: %v", err)
	}
	logged := map[int64]api.Event{}
	for _, e := range c.events() {
		logged[e.ID] = e
	}
	streamMu.Lock()
	got := slices.Clone(delivered)
	streamMu.Unlock()
	for i, e := range got {
		if i > 0 && e.ID <= got[i-1].ID {
			t.Errorf("the stream delivered event %d after %d", e.ID, got[i-1].ID)
		}
		l, ok := logged[e.ID]
		if !ok || l.Kind != e.Kind || l.Job != e.Job || l.Task != e.Task {
			t.Errorf("delivered event %d (%s %s/%s) is %+v in the log", e.ID, e.Kind, e.Job, e.Task, l)
		}
	}
	t.Logf("the stream delivered %d events across the faults, each in the log as delivered", len(got))
	if len(got) == 0 {
		t.Error("the stream delivered nothing")
	}
	// Every acknowledged job is stored and ends, each task exactly once.
	checkEndedOnce(t, c, ids)
	// The worker lived throughout: no leader declared it lost (which
	// would requeue its tasks). And after each fault a new leader started
	// tasks soon: the time to the first task started after it.
	evs := c.events()
	for _, e := range evs {
		if e.Kind == "worker_lost" {
			t.Errorf("worker %s was declared lost at %s: %s", e.Worker, e.At.Format(time.StampMilli), e.Message)
		}
	}
	var starts []string
	for _, f := range faults {
		var first time.Time
		for _, e := range evs {
			if e.Kind == "task_started" && e.At.After(f.at) && (first.IsZero() || e.At.Before(first)) {
				first = e.At
			}
		}
		if first.IsZero() {
			t.Errorf("no task started after the fault %s", f.kind)
			continue
		}
		gap := first.Sub(f.at)
		starts = append(starts, fmt.Sprintf("%s %v", f.kind, gap.Round(time.Millisecond)))
		limit := 3 * time.Second
		if f.kind == "SIGSTOP" {
			limit = leaderTimeout + 3*time.Second
		}
		if gap > limit {
			t.Errorf("the first task started %v after the fault %s, want within %v", gap, f.kind, limit)
		}
	}
	t.Logf("fault to the first task started by a new leader: %s", strings.Join(starts, "; "))
}

// workerBack waits until the worker name has registered with replica l
// since the time since (its registration, or a heartbeat after it, is
// newer), and returns when it saw that; the zero time if not within.
func (rs *replicaSet) workerBack(l int, name string, since time.Time, within time.Duration) time.Time {
	hc := &http.Client{Timeout: time.Second, Transport: adminTransport{}}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := hc.Get("http://" + rs.addrs[l] + "/v1/workers")
		if err == nil {
			var ws []api.Worker
			_ = json.NewDecoder(resp.Body).Decode(&ws)
			resp.Body.Close()
			for _, w := range ws {
				if w.Name == name && w.LastSeen.After(since) {
					return time.Now()
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}
}
