package admit

import (
	"context"
	"errors"
	"fmt"
)

// InputChecker says whether a job's input can be read: the first stage of
// the seed's pipeline reads each image's header to verify access before the
// job may take any capacity. Implementations do I/O, so the control plane
// (or the simulator) calls them before handing the job to the engine, and
// sends a job that fails to the engine's dead-letter list instead.
type InputChecker interface {
	// CheckInput returns nil when url can be read, else why not.
	CheckInput(ctx context.Context, url string) error
}

// CheckInputs checks every input of a job with c, in order, and returns the
// first failure, naming the input. A nil checker accepts everything.
func CheckInputs(ctx context.Context, c InputChecker, inputs []string) error {
	if c == nil {
		return nil
	}
	for _, in := range inputs {
		if err := c.CheckInput(ctx, in); err != nil {
			return fmt.Errorf("input %q: %w", in, err)
		}
	}
	return nil
}

// StaticChecker fails the inputs it lists, with the reason given; every
// other input is accessible. Scenarios and tests describe bad inputs with it.
type StaticChecker map[string]string

// CheckInput implements InputChecker.
func (s StaticChecker) CheckInput(_ context.Context, url string) error {
	if why, bad := s[url]; bad {
		if why == "" {
			why = "inaccessible"
		}
		return errors.New(why)
	}
	return nil
}
