package agent

// Leftovers. A task's own process dies with the agent (fork_linux.go), but
// what it started in its process group outlives it: a worker killed with
// SIGKILL and started again would run the retry of an attempt beside the
// orphans of the first. So the agent records, in its state directory
// (Config.StateDir), the process group of every task while it runs, with
// its leader's start time, and at start kills whatever of those groups is
// still there before it registers. The start time tells a group of ours
// from one that got the same ID after ours ended; a boot ID tells the
// records of the machine's previous boot, which mean nothing now.

// groupsFile is the file of the state directory that lists the process
// groups of running tasks. It is a log of JSON lines: the first is a
// snapshot (groupsState), each later one a change (groupChange) appended
// as a task starts or ends, so recording a task costs one small write,
// not a new file. When the changes outnumber the groups by far, the log
// is compacted: a new snapshot is written whole and renamed over it, so
// a crash leaves the old log or the new, never half of one; a crash in
// the middle of an append leaves at most a torn last line, which is read
// as never written.
const groupsFile = "tasks.json"

// lockFile is the file of the state directory the running agent holds
// locked, with its PID in it.
const lockFile = "agent.lock"

// groupEntry is one task's process group: its ID (the PID of its leader,
// the task's own process), the leader's start time in clock ticks after
// boot (/proc/PID/stat), and the attempt, for the log.
type groupEntry struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
	// StartSpan, when not 0, says the leader started at Start or up to
	// that many ticks later: its fork spanned them (startWindow).
	StartSpan uint64 `json:"startSpan,omitempty"`

	Job     string `json:"job"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	// Dir is the attempt's directory, removed when a restarted agent
	// cleans up after a crash.
	Dir string `json:"dir,omitempty"`
}

// startWindow is when a process started, in clock ticks after boot as
// /proc/PID/stat gives it: at From, or up to Span ticks later when its
// fork spanned several ticks. A zero From is not known.
type startWindow struct{ From, Span uint64 }

// attemptDirPrefix starts the name of every attempt's directory; a
// restarted agent removes only recorded directories named so.
const attemptDirPrefix = "allot-attempt-"

// groupsState is the first line of groupsFile, and what the whole log
// reads as.
type groupsState struct {
	// Boot is the boot ID of the machine when the groups were recorded.
	Boot   string       `json:"boot"`
	Groups []groupEntry `json:"groups"`
}

// groupChange is a later line of groupsFile: a group added (a task
// started) or removed (its task ended and the group was killed).
type groupChange struct {
	Add    *groupEntry `json:"add,omitempty"`
	Remove int         `json:"remove,omitempty"`
}
