package control

import (
	"fmt"
	"strings"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
)

// Jobs no registered worker can ever run. A job asking for what no worker
// has (a GPU on a CPU-only fleet, a label no worker carries) would wait for
// ever in silence; as Slurm answers "Requested node configuration is not
// available", the submission answer warns of it (api.Job.Warnings), and a
// strict submission is refused. Workers register at any time, so the
// default is to accept: a worker that has what the job needs may join.

// unrunnableWarnings are the warnings of a submission answer for never.
func unrunnableWarnings(never []engine.NeverRunnable) []api.Warning {
	out := make([]api.Warning, 0, len(never))
	for _, n := range never {
		out = append(out, api.Warning{Code: api.WarningUnrunnable, Tasks: n.Tasks, Message: unrunnableMessage(n)})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func unrunnableMessage(n engine.NeverRunnable) string {
	lacks := n.Reason.Message
	if i := strings.LastIndex(lacks, "("); i >= 0 {
		lacks = strings.TrimSuffix(lacks[i+1:], ")") // "2 workers: 2 lack gpus"
	}
	return fmt.Sprintf("no registered worker can ever run task(s) %s: they need %s (%s); the job waits until a worker that has it registers",
		strings.Join(n.Tasks, ", "), n.Needs, lacks)
}

// unrunnableError refuses a strict submission whose tasks no registered
// worker can ever run, naming them and what the workers lack.
func unrunnableError(never []engine.NeverRunnable) error {
	errs := make(model.FieldErrors, 0, len(never))
	for _, n := range never {
		errs = append(errs, &model.FieldError{Path: "tasks", Msg: unrunnableMessage(n) + " (refused: strict submission)"})
	}
	return errs
}
