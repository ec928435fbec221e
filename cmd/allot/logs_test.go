package main

import (
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func TestLogHeaderShowsTheExitCodeOnceReported(t *testing.T) {
	exit := 143
	for _, tc := range []struct {
		log  api.TaskLog
		want string
	}{
		{api.TaskLog{Task: "s", Attempt: 1}, "==> s (attempt 1) <=="},
		{api.TaskLog{Task: "s", Attempt: 2, ExitCode: &exit}, "==> s (attempt 2, exit 143) <=="},
	} {
		if got := logHeader(tc.log); got != tc.want {
			t.Errorf("logHeader(%+v) = %q, want %q", tc.log, got, tc.want)
		}
	}
}
