package api

import "fmt"

// LeaderHeader is the header of a not_leader answer that carries the
// leader's API URL (as Error.Leader does), for callers that read headers
// before bodies, and proxies.
const LeaderHeader = "Allot-Leader"

// Leadership tells the API server whether the replica it runs in leads.
// Several `allot server` replicas share one store and one of them leads:
// only the leader runs the scheduling loop, so only it takes changes and
// the worker protocol. A replica that does not lead answers not_leader
// with the leader's URL, and the clients and agents move there
// (docs/ha.md). A single server has no Leadership (nil): it always leads.
// The leader election implements it; tests stand in for it.
type Leadership interface {
	// Leader reports whether this replica leads and, when it does not,
	// the API URL of the replica that does ("" while none is known).
	Leader() (leading bool, leaderURL string)
}

// NotLeaderError is the answer of a replica that does not lead to a
// request only the leader serves: it was not handled. Leader is the
// leader's API URL, empty while none is known. The API answers it 503
// not_leader, from whichever layer returns it.
type NotLeaderError struct {
	Leader string
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return "this server does not lead and no leader is known yet; try another server of the cluster"
	}
	return fmt.Sprintf("this server does not lead; send the request to the leader at %s", e.Leader)
}
