//go:build !linux

package agent

import (
	"fmt"
	"os"

	"github.com/allot-sched/allot/internal/api"
)

// Without /proc, the agent does not record its tasks' process groups:
// only Linux agents clean up after a crash.

type taskGroups struct{}

func (*taskGroups) add(int, startWindow, api.Attempt, string) (uint64, error) { return 0, nil }
func (*taskGroups) remove(int, uint64) error                                  { return nil }

type stateDir struct{ groups *taskGroups }

func openStateDir(dir string) (*stateDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	return &stateDir{}, nil
}

func (*stateDir) killLeftovers() ([]groupEntry, error) { return nil, nil }
func (*stateDir) close()                               {}
