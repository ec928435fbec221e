package netlimit

import "fmt"

// Defaults sized from the open-file limit. The connection budget is the
// limit less a headroom for everything else the server opens: its store
// (the database, its journal and shared-memory files), logs, the input
// checks it makes at submission, refusals being written (maxRefusing),
// and the listener itself.
const (
	// DefaultMax bounds the default Max however high the file limit is:
	// each connection costs a goroutine and buffers (some 20 KiB), and a
	// fleet needs two or three per worker.
	DefaultMax = 8192
	// minHeadroom is the smallest number of descriptors left aside.
	minHeadroom = 128
	// maxDefaultReserved and maxDefaultPerAddress cap the defaults
	// derived from Max.
	maxDefaultReserved   = 256
	maxDefaultPerAddress = 512
	// minDefaultPerAddress keeps a client (or a few workers behind one
	// address) a useful share of a small pool.
	minDefaultPerAddress = 16
	// unknownFileLimit stands for the file limit where it cannot be read.
	unknownFileLimit = 1024
)

// Budget is how many connections a process that may open fileLimit files
// can keep, with headroom for its other files: an eighth of the limit,
// at least minHeadroom.
func Budget(fileLimit uint64) int {
	if fileLimit == 0 {
		fileLimit = unknownFileLimit
	}
	headroom := max(fileLimit/8, minHeadroom)
	if fileLimit <= 2*headroom {
		return int(fileLimit / 2)
	}
	return int(min(fileLimit-headroom, 1<<30))
}

// Resolve fills the zero fields of l with the defaults for a process that
// may open fileLimit files (0: unknown) and brings Max within its Budget.
// It returns what it had to change of what was set, for the log.
//
// The defaults: Max is the budget, at most DefaultMax; Reserved is a
// sixteenth of Max (at least 1, at most 256); PerAddress is an eighth of
// the general pool (at least 16, at most 512, never more than the pool).
func (l Limits) Resolve(fileLimit uint64) (Limits, []string) {
	var notes []string
	budget := Budget(fileLimit)
	switch {
	case l.Max <= 0:
		l.Max = min(budget, DefaultMax)
	case l.Max > budget:
		notes = append(notes, fmt.Sprintf("maxConnections %d is more than the open-file limit (%d) leaves for connections; using %d (raise the limit, e.g. LimitNOFILE= or ulimit -n, to keep more)",
			l.Max, fileLimit, budget))
		l.Max = budget
	}
	if l.Reserved <= 0 {
		l.Reserved = min(max(l.Max/16, 1), maxDefaultReserved)
	}
	if l.Reserved >= l.Max {
		reserved := l.Max / 2
		notes = append(notes, fmt.Sprintf("reservedConnections %d leaves no room in maxConnections %d; using %d", l.Reserved, l.Max, reserved))
		l.Reserved = reserved
	}
	general := l.Max - l.Reserved
	if l.PerAddress <= 0 {
		l.PerAddress = min(max(general/8, minDefaultPerAddress), maxDefaultPerAddress, general)
	}
	return l, notes
}
