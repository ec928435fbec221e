//go:build !unix

package agent

import (
	"errors"
	"os"
)

// Elsewhere tasks run as the agent's user: no run-as, no job users.

func newUserPolicy(runAs string, allow []string) (*userPolicy, error) {
	if runAs != "" || len(allow) > 0 {
		return nil, errors.New("run-as, allow-user: running tasks as another user needs a Unix system")
	}
	return nil, nil
}

func giveTo(string, *taskUser) error { return nil }

func ownedBy(os.FileInfo, *taskUser) bool { return true }

const openResultFlags = os.O_RDONLY
