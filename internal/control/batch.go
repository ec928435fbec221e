package control

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Merged batches in the server (docs/placement.md#task-merging). The
// engine starts a batch as its head's Start followed by its members' (all
// naming the head in Start.Batch); the batch holds one slot. The server
// hands it to the worker as ONE lease entry, api.Assignment.Batch, which
// the agent runs member after member in one slot. The engine's batch
// semantics then follow from the order of the agent's reports: each
// member that ran is reported on its own as it ends (it leaves the batch
// with its own outcome), and the head's report comes last and stands for
// the batch — a success when every member ran and succeeded, a failure
// naming the failing member otherwise — so the members that never ran end
// with the head: batch_failure (or a retry), parent = the head.

// batchRefusal is the top-level run of a merged batch's assignment. An
// agent that knows batches runs Batch and ignores it; one that predates
// them would run the head alone and report it, which would end the members
// as if they had run. It runs this instead: the head fails with a message
// that says why, and the members with it.
const batchRefusal = `echo "allot: this assignment is a merged batch (docs/placement.md#task-merging) and this worker's agent cannot run batches: upgrade allot worker" >&2; exit 3`

// reasonMerged marks the stored record of a task that runs as a member of
// another task's merged batch; its message names the head (mergedMessage),
// so that a restarted server puts the member back into its batch
// (recover.go).
const reasonMerged = "merged"

// mergedPrefix starts the message of a member's record; the head's name
// follows, quoted.
const mergedPrefix = "runs in merged batch "

func mergedMessage(head string) string { return mergedPrefix + strconv.Quote(head) }

// batchHead returns the head of the merged batch rec was stored running
// in, or false for a task that runs on its own.
func batchHead(rec *store.Task) (string, bool) {
	if !inBatch(rec) {
		return "", false
	}
	q, ok := strings.CutPrefix(rec.Message, mergedPrefix)
	if !ok {
		return "", false
	}
	head, err := strconv.Unquote(q)
	return head, err == nil
}

// assign queues the assignment a of start s for its worker. A batch head
// opens a batch assignment; a member joins the one of its head, which
// precedes it in the same round.
func (c *Controller) assign(t *txn, rec *store.Task, s engine.Start, a api.Assignment) {
	w := s.Worker
	switch s.Batch {
	case "":
		t.assign[w] = append(t.assign[w], a)
		return
	case s.Task:
		t.assign[w] = append(t.assign[w], api.Assignment{Attempt: a.Attempt, Run: batchRefusal, Batch: []api.Assignment{a}})
		return
	}
	rec.Reason, rec.Message = reasonMerged, mergedMessage(s.Batch)
	t.touchTask(rec)
	as := t.assign[w]
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].Batch != nil && as[i].Job == s.Job && as[i].Task == s.Batch {
			as[i].Batch = append(as[i].Batch, a)
			return
		}
	}
	// No batch assignment of the head: its own assignment could not be
	// built and its failure ended the members with it. One still running
	// (it cannot be, but the worker must not miss a task the engine
	// runs) goes alone; its own report ends it.
	if st, on, _ := c.eng.TaskState(s.Job, s.Task); st == model.TaskRunning && on == w {
		t.assign[w] = append(t.assign[w], a)
	}
}

// attemptsOf lists the attempts an assignment carries: its own, or every
// member's for a merged batch (the head first). A lease confirms each.
func attemptsOf(a api.Assignment) []api.Attempt {
	if len(a.Batch) == 0 {
		return []api.Attempt{a.Attempt}
	}
	out := make([]api.Attempt, len(a.Batch))
	for i, m := range a.Batch {
		out[i] = m.Attempt
	}
	return out
}

// batchStartData adds the head of s's merged batch to its task_started
// data, a JSON object.
func batchStartData(s engine.Start, data json.RawMessage) json.RawMessage {
	if s.Batch == "" || len(data) == 0 || data[len(data)-1] != '}' {
		return data
	}
	b := append(data[:len(data)-1:len(data)-1], `,"batch":`...)
	b = strconv.AppendQuote(b, s.Batch)
	return append(b, '}')
}

// endData is the data of the event recording e: the head of the merged
// batch a member ended with, if any.
func endData(e engine.TaskEnd) any {
	if e.Parent == "" {
		return nil
	}
	b := append([]byte(`{"parent":`), strconv.Quote(e.Parent)...)
	return json.RawMessage(append(b, '}'))
}

// inBatch reports whether rec was stored running as a member of another
// task's merged batch.
func inBatch(rec *store.Task) bool {
	return rec.State == string(model.TaskRunning) && rec.Reason == reasonMerged
}
