package policy

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Figure is one named number a policy shows about a group in an
// explanation (usage, weight factor, entitlement), with its unit, so that
// the API and the CLI print a policy's figures without knowing the policy.
type Figure struct {
	// Name is stable for scripts, lowerCamel: usage, weightFactor,
	// entitled, runningFraction.
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is "slot-seconds", "fraction" (of the pool), or empty for a
	// plain number.
	Unit string `json:"unit,omitempty"`
}

// Help is one thing that would let a job start, as its policy sees it.
// Kind is stable for scripts (below_entitlement, share_above_entitlement,
// priority, suspended).
type Help struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// GroupState is one group of a queue as an explanation sees it.
type GroupState struct {
	Key     string
	Running int
	Waiting int
	// Priority and Urgent are the group's oldest job's.
	Priority int
	Urgent   bool
}

// ExplainQuery is what the engine asks a policy about the group of the job
// it explains.
type ExplainQuery struct {
	Now   time.Time
	Queue string
	// Slots counts the pool's slots on ready workers.
	Slots int
	Group GroupState
	// Priority and Urgent are the job's own.
	Priority int
	Urgent   bool
	// Reason is the group's reason of the last cycle, zero when it had
	// none.
	Reason model.Reason
	// Ahead lists the groups with waiting tasks served before the job's,
	// in service order.
	Ahead []GroupState
}

// GroupExplanation is a policy's own account of one group.
type GroupExplanation struct {
	// Figures are the group's figures, in the order to show them.
	Figures []Figure
	// Summary says the figures in one sentence, for people.
	Summary string
	// Help is what the figures suggest would let the job start; the
	// engine says it when the policy (not placement) holds the job back.
	Help []Help
	// RankHelp is what would move the group up the policy's service
	// order, said after the advice about the job's place in its group.
	RankHelp []Help
	// FullPoolHelp is what frees slots when the pool is full: other
	// groups running above what they are entitled to.
	FullPoolHelp []Help
}

// Explainer is a policy that explains where a group stands by its own
// figures. The engine shows what it returns as it is, so a new policy
// explains itself without the engine, the API or the CLI knowing it.
type Explainer interface {
	ExplainGroup(q ExplainQuery) GroupExplanation
}

// FigureRanker is a policy that ranks groups, for an explanation, by one of
// its figures at now (lowest first, key on ties) rather than by the service
// order of its last Allocate (Ranker). Groups it has no value for rank as 0.
type FigureRanker interface {
	// RankFigures returns the name and unit of the figure groups are
	// ranked by, each group's value of it by key, and a phrase saying what
	// orders the groups.
	RankFigures(now time.Time) (name, unit string, values map[string]float64, by string)
}
