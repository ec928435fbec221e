package store

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// The checks below are the row rules of Batch, Store.CreateJob and
// Store.PutToken that do not depend on a database: every backend calls
// them before it writes, so that all of them refuse the same rows with the
// same messages (each an ErrInvalid naming the field), and storetest
// asserts the refusals. What only the database can tell (a task of a job
// that is not stored) each backend checks with its own constraints.

// Times a store can represent: int64 Unix nanoseconds, the years 1678 to
// 2262.
var (
	MinTime = time.Unix(0, math.MinInt64)
	MaxTime = time.Unix(0, math.MaxInt64)
)

// CheckTime refuses a time outside MinTime and MaxTime; the zero time is
// "not set" and accepted.
func CheckTime(field string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(MinTime) || t.After(MaxTime) {
		return fmt.Errorf("%s: %s is outside the years 1678-2262: %w", field, t.Format(time.RFC3339), ErrInvalid)
	}
	return nil
}

// CheckJSON refuses a document that is not valid JSON; nil or empty is
// accepted (it is stored as nothing).
func CheckJSON(field string, doc json.RawMessage) error {
	if len(doc) > 0 && !json.Valid(doc) {
		return fmt.Errorf("%s: not valid JSON: %w", field, ErrInvalid)
	}
	return nil
}

// CheckJob checks a job row: an ID, representable times, a JSON spec.
func CheckJob(j Job) error {
	if j.ID == "" {
		return fmt.Errorf("id: empty: %w", ErrInvalid)
	}
	if err := CheckTime("submitted", j.Submitted); err != nil {
		return err
	}
	if err := CheckTime("ended", j.Ended); err != nil {
		return err
	}
	return CheckJSON("spec", j.Spec)
}

// CheckTask checks a task row: its job and name, representable times, a
// JSON result, a usage that is a quantity (not negative, not NaN).
func CheckTask(t Task) error {
	if t.Job == "" {
		return fmt.Errorf("job: empty: %w", ErrInvalid)
	}
	if t.Name == "" {
		return fmt.Errorf("name: empty: %w", ErrInvalid)
	}
	if !(t.CPUSeconds >= 0) || math.IsInf(t.CPUSeconds, 0) {
		return fmt.Errorf("cpuSeconds: %v is not a CPU time: %w", t.CPUSeconds, ErrInvalid)
	}
	if t.PeakMemory < 0 {
		return fmt.Errorf("peakMemory: %d is negative: %w", t.PeakMemory, ErrInvalid)
	}
	if err := CheckTime("started", t.Started); err != nil {
		return err
	}
	if err := CheckTime("ended", t.Ended); err != nil {
		return err
	}
	return CheckJSON("result", t.Result)
}

// CheckJobTasks checks the tasks CreateJob is given for job id: each
// belongs to it (or names no job) and no two share a name.
func CheckJobTasks(id string, tasks []Task) error {
	names := make(map[string]int, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		if t.Job != "" && t.Job != id {
			return fmt.Errorf("tasks[%d] (%s): belongs to job %q: %w", i, t.Name, t.Job, ErrInvalid)
		}
		if prev, dup := names[t.Name]; dup {
			return fmt.Errorf("tasks[%d]: name %q also used by tasks[%d]: %w", i, t.Name, prev, ErrInvalid)
		}
		names[t.Name] = i
	}
	return nil
}

// CheckWorker checks a worker row: a name, representable times, a JSON
// spec.
func CheckWorker(w Worker) error {
	if w.Name == "" {
		return fmt.Errorf("name: empty: %w", ErrInvalid)
	}
	if err := CheckTime("registered", w.Registered); err != nil {
		return err
	}
	if err := CheckTime("lastSeen", w.LastSeen); err != nil {
		return err
	}
	return CheckJSON("spec", w.Spec)
}

// CheckEvent checks an event row: a kind, a representable time, JSON data.
func CheckEvent(e Event) error {
	if e.Kind == "" {
		return fmt.Errorf("kind: empty: %w", ErrInvalid)
	}
	if err := CheckTime("at", e.At); err != nil {
		return err
	}
	return CheckJSON("data", e.Data)
}

// CheckKVKey refuses the empty key.
func CheckKVKey(key string) error {
	if key == "" {
		return fmt.Errorf("kv: empty key: %w", ErrInvalid)
	}
	return nil
}

// CheckToken checks a token row: an ID, a hash, a role and representable
// times.
func CheckToken(t Token) error {
	switch {
	case t.ID == "":
		return fmt.Errorf("id: empty: %w", ErrInvalid)
	case len(t.Hash) == 0:
		return fmt.Errorf("hash: empty: %w", ErrInvalid)
	case t.Role == "":
		return fmt.Errorf("role: empty: %w", ErrInvalid)
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"created", t.Created}, {"expires", t.Expires}, {"revoked", t.Revoked}} {
		if err := CheckTime(f.name, f.t); err != nil {
			return err
		}
	}
	return nil
}

// CheckRevoke checks the time RevokeToken is given: set and representable.
func CheckRevoke(at time.Time) error {
	if err := CheckTime("revoked", at); err != nil {
		return err
	}
	if at.IsZero() {
		return fmt.Errorf("revoked: the zero time: %w", ErrInvalid)
	}
	return nil
}
