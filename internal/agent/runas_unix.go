//go:build unix

package agent

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// newUserPolicy is the policy of this process's agent.
func newUserPolicy(runAs string, allow []string) (*userPolicy, error) {
	euid := os.Geteuid()
	self := strconv.Itoa(euid)
	if u, err := user.LookupId(self); err == nil {
		self = u.Username
	}
	return newUserPolicyWith(euid, self, runAs, allow, lookupUser)
}

// lookupUser finds a user of the machine, with its groups.
func lookupUser(name string) (*taskUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("no user %q on this machine: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %q: IDs %s:%s are not numbers", name, u.Uid, u.Gid)
	}
	tu := &taskUser{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("user %q: groups: %w", name, err)
	}
	for _, id := range ids {
		g, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %q: group ID %s is not a number", name, id)
		}
		tu.Groups = append(tu.Groups, uint32(g))
	}
	return tu, nil
}

// giveTo makes path owned by u, so a task running as u may write in it.
func giveTo(path string, u *taskUser) error {
	if u == nil {
		return nil
	}
	return os.Lchown(path, int(u.UID), int(u.GID))
}

// ownedBy reports whether fi is u's own file. A result file that is not
// the task's user's is refused: where the kernel lets a user hard-link a
// file it cannot read (fs.protected_hardlinks = 0), a task could otherwise
// leave a link to a root-only file as its result.
func ownedBy(fi os.FileInfo, u *taskUser) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return u == nil || ok && st.Uid == u.UID
}

// openResultFlags open a task's result file without following a link and
// without waiting on a pipe: a task running as another user must not make
// the agent read what it may not, or hang it.
const openResultFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
