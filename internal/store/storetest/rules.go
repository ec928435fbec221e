package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// testRowRulesAreTheSharedChecks asserts that a backend refuses a bad row
// with the check package store shares between backends (store.CheckJob,
// CheckTask, …): the refusal wraps ErrInvalid and carries the shared
// check's message, so every backend refuses the same rows in the same
// words.
func testRowRulesAreTheSharedChecks(t *testing.T, o opener) {
	past := time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)
	badJob := newJob("j", "q", "")
	badJob.Spec = json.RawMessage(`{"a":`)
	for _, tc := range []struct {
		name  string
		write func(store.Store, *testing.T) error
		check error // what the shared check says about the bad row
	}{
		{"JobSpecNotJSON", func(s store.Store, t *testing.T) error {
			_, err := s.CreateJob(t.Context(), badJob, nil, nil)
			return err
		}, store.CheckJob(badJob)},
		{"TasksOfAnotherJob", func(s store.Store, t *testing.T) error {
			_, err := s.CreateJob(t.Context(), newJob("j", "q", ""), []store.Task{{Job: "k", Name: "x"}}, nil)
			return err
		}, store.CheckJobTasks("j", []store.Task{{Job: "k", Name: "x"}})},
		{"TaskWithoutName", func(s store.Store, t *testing.T) error {
			return s.Commit(t.Context(), store.Batch{Tasks: []store.Task{{Job: "j"}}})
		}, store.CheckTask(store.Task{Job: "j"})},
		{"WorkerTimeOutOfRange", func(s store.Store, t *testing.T) error {
			return s.Commit(t.Context(), store.Batch{Workers: []store.Worker{{Name: "w", LastSeen: past}}})
		}, store.CheckWorker(store.Worker{Name: "w", LastSeen: past})},
		{"EventWithoutKind", func(s store.Store, t *testing.T) error {
			return s.Commit(t.Context(), store.Batch{Events: []store.Event{{Job: "j"}}})
		}, store.CheckEvent(store.Event{Job: "j"})},
		{"EmptyKVKey", func(s store.Store, t *testing.T) error {
			return s.Commit(t.Context(), store.Batch{KV: map[string][]byte{"": []byte("x")}})
		}, store.CheckKVKey("")},
		{"TokenWithoutRole", func(s store.Store, t *testing.T) error {
			return s.PutToken(t.Context(), store.Token{ID: "t", Hash: []byte("h")})
		}, store.CheckToken(store.Token{ID: "t", Hash: []byte("h")})},
		{"RevokeAtTheZeroTime", func(s store.Store, t *testing.T) error {
			_, err := s.RevokeToken(t.Context(), "t", time.Time{})
			return err
		}, store.CheckRevoke(time.Time{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.check, store.ErrInvalid) {
				t.Fatalf("the shared check accepts the bad row: %v", tc.check)
			}
			err := tc.write(o.store(t), t)
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.check.Error()) {
				t.Errorf("err = %v, want ErrInvalid carrying %q", err, tc.check)
			}
		})
	}
}
