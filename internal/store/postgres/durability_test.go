package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

// TestAcknowledgedCommitsSurviveACrashOfPostgres commits batches while
// PostgreSQL is stopped as by a crash (pg_ctl stop -m immediate: no
// checkpoint, the server recovers from its write-ahead log when it starts
// again), three times at different points, and checks that every commit
// that was acknowledged is there, whole, and no commit is there in part.
// (Power loss cannot be staged in a test; fsync=on, which Open insists on,
// is what covers it.)
func TestAcknowledgedCommitsSurviveACrashOfPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes the test cluster")
	}
	c := pgtest.Need(t)
	url := pgtest.URL(t)
	for round := range 3 {
		s := openURL(t, url)
		acked := make(chan int, 1000)
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			defer close(acked)
			for i := 1; ; i++ {
				b := store.Batch{KV: map[string][]byte{"last/" + strconv.Itoa(round): []byte(strconv.Itoa(i))}}
				for k := range 20 {
					b.Events = append(b.Events, store.Event{At: time.Now(), Kind: "tick",
						Data: json.RawMessage(fmt.Sprintf(`{"round":%d,"batch":%d,"k":%d}`, round, i, k))})
				}
				if err := s.Commit(context.Background(), b); err != nil {
					done <- err
					return
				}
				acked <- i
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
			}
		}()
		last, killAt := 0, 30+round*17
		for n := range acked {
			last = n
			if n == killAt {
				if err := c.Crash(); err != nil {
					close(stop)
					t.Fatal(err)
				}
			}
		}
		commitErr := <-done
		if commitErr == nil || last < killAt {
			t.Fatalf("round %d: the committer went on after the crash (last ack %d, err %v)", round, last, commitErr)
		}
		if err := c.Restart(); err != nil {
			t.Fatal(err)
		}
		s.Close()

		s = openURL(t, url)
		evs, err := s.Events(t.Context(), store.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.KV(t.Context(), "last/"+strconv.Itoa(round))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		stored, _ := strconv.Atoi(string(v))
		if stored < last {
			t.Fatalf("round %d: last stored batch %d, but batch %d was acknowledged", round, stored, last)
		}
		perBatch := map[[2]int]int{}
		for _, e := range evs {
			var d struct{ Round, Batch int }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			perBatch[[2]int{d.Round, d.Batch}]++
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
		if thisRound < last {
			t.Errorf("round %d: %d batches stored, fewer than the %d acknowledged", round, thisRound, last)
		}
		t.Logf("round %d: crashed after %d acknowledged commits; %d in the database; the commit under way: %v", round, last, thisRound, commitErr)
	}
}
