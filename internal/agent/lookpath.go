package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// programs caches where the agent's PATH leads the commands of tasks.
var programs = &pathCache{entries: map[string]pathEntry{}, now: time.Now}

// pathTTL is how long a command found on the PATH is not looked up
// again: a program installed meanwhile in a directory earlier on the
// PATH is run from the next lookup on.
const pathTTL = time.Second

// pathCache remembers for a while where exec.LookPath found a command:
// the lookup tries each directory of the PATH in turn (a dozen stat
// calls on a long PATH), for every task, when most tasks run the same
// few programs.
type pathCache struct {
	mu      sync.Mutex
	entries map[string]pathEntry
	now     func() time.Time
}

type pathEntry struct {
	path, pathEnv string // where it was found, under which PATH
	at            time.Time
}

// lookPath returns where the PATH leads the command name, false when it
// is not a name to look up (it holds a slash) or is not found: the caller
// then leaves the lookup, and its error, to exec.Command. A path found
// less than pathTTL ago is used again while it is still an executable
// file.
func (c *pathCache) lookPath(name string) (string, bool) {
	if name == "" || strings.ContainsRune(name, '/') {
		return "", false
	}
	pathEnv := os.Getenv("PATH")
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[name]
	c.mu.Unlock()
	if ok && e.pathEnv == pathEnv && now.Sub(e.at) < pathTTL && executable(e.path) {
		return e.path, true
	}
	path, err := exec.LookPath(name)
	if err != nil || !filepath.IsAbs(path) {
		// Not found, or found through a relative PATH entry, which
		// exec.Command refuses (exec.ErrDot): its own lookup says so.
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= 1024 {
		clear(c.entries)
	}
	c.entries[name] = pathEntry{path: path, pathEnv: pathEnv, at: now}
	return path, true
}

// executable says whether path is a file someone may execute, as
// exec.LookPath checks.
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
