package agent

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/allot-sched/allot/internal/api"
)

// The user a task runs as. A task must not reach its worker's secrets: an
// agent that runs as root runs tasks as an unprivileged user (its run-as
// user, nobody by default in the CLI), which cannot read the agent's
// memory, environment or files. A job may name a user of its own (the job
// field user); the agent takes it only if one of its allow-user patterns
// matches it, and fails the attempt otherwise. Root is never matched by a
// wildcard: only a pattern that is exactly "root" allows it. An agent that
// is not root cannot switch users: it runs every task as itself, and fails
// an attempt whose job names another user.

// taskUser is a Unix user a task runs as: its IDs, groups and home.
type taskUser struct {
	Name     string
	UID, GID uint32
	Groups   []uint32
	Home     string
}

// userPolicy decides the user each attempt runs as.
type userPolicy struct {
	euid  int    // the agent's effective user ID
	self  string // the agent's user name
	runAs string // the user of tasks whose job names none; "" runs them as the agent
	allow []string
	// lookup finds a user by name (os/user in the agent).
	lookup func(name string) (*taskUser, error)
}

// newUserPolicyWith checks the run-as user and the allow-user patterns of
// an agent running as euid (user self), resolving names with lookup.
func newUserPolicyWith(euid int, self, runAs string, allow []string, lookup func(string) (*taskUser, error)) (*userPolicy, error) {
	p := &userPolicy{euid: euid, self: self, allow: allow, lookup: lookup}
	for _, pat := range allow {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return nil, fmt.Errorf("allow-user: %q: syntax error in pattern (want a user name, or a pattern like svc-*)", pat)
		}
	}
	if runAs != "" && runAs != self {
		if euid != 0 {
			return nil, fmt.Errorf("run-as: the agent runs as %q (uid %d); only root can run tasks as another user", self, euid)
		}
		if _, err := lookup(runAs); err != nil {
			return nil, fmt.Errorf("run-as: %w", err)
		}
		p.runAs = runAs
	}
	return p, nil
}

// userFor returns the user the attempt runs as, nil for the agent's own,
// or why it may not run here.
func (p *userPolicy) userFor(as api.Assignment) (*taskUser, error) {
	if p == nil {
		if as.User != "" {
			return nil, fmt.Errorf("user %q: this worker cannot run tasks as another user", as.User)
		}
		return nil, nil
	}
	name := as.User
	switch {
	case name == "" && p.runAs == "":
		return nil, nil
	case name == "":
		name = p.runAs
	case name == p.self && p.euid != 0:
		return nil, nil // it runs as that user already
	case p.euid != 0:
		return nil, fmt.Errorf("this worker runs as %q (uid %d), not as root, and cannot run tasks as %q", p.self, p.euid, name)
	case !p.allows(name):
		allowed := "none"
		if len(p.allow) > 0 {
			allowed = strings.Join(p.allow, ", ")
		}
		return nil, fmt.Errorf("user %q is not allowed on this worker (allowed: %s)", name, allowed)
	}
	return p.lookup(name)
}

// allows reports whether an allow-user pattern matches name. Root needs a
// pattern that names it.
func (p *userPolicy) allows(name string) bool {
	for _, pat := range p.allow {
		if name == "root" && pat != "root" {
			continue
		}
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// switches reports whether tasks may run as users other than the agent's.
func (p *userPolicy) switches() bool {
	return p != nil && p.euid == 0 && ((p.runAs != "" && p.runAs != p.self) || len(p.allow) > 0)
}

// shareWorkDir creates the agent's work directory (Config.WorkDir) when it
// is missing. Tasks that name no workdir work there: when they run as
// users other than the agent's, a directory the agent creates is writable
// for all of them and sticky, like /tmp (each removes only its own files).
// An existing directory is used as its owner made it.
func shareWorkDir(dir string, users *userPolicy) error {
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(dir); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if users.switches() {
		return os.Chmod(dir, 0o777|os.ModeSticky)
	}
	return nil
}
