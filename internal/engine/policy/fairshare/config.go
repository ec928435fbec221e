package fairshare

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/allot-sched/allot/internal/model"
)

// Reservation models of the fairshare policy: how computeReservation turns
// into a fraction of the pool held back for shares that have no jobs yet.
const (
	// ReservationEven follows the AWS Batch blog's worked figures (the
	// default): computeReservation is spread evenly over the shares named in
	// the policy, and each named share with no active jobs holds back its
	// part. R=50 with two shares, one active: 25% held back.
	ReservationEven = "even"
	// ReservationExponential follows the AWS Batch API documentation: the
	// fraction held back is (computeReservation/100)^activeShares, whatever
	// the shares are called. R=50 with one active share: 50% held back.
	ReservationExponential = "exponential"
)

// Limits of the fairshare configuration, the same as AWS Batch's, so that a
// scheduling policy copied from Batch means the same thing here.
const (
	MinWeightFactor = 0.0001
	MaxWeightFactor = 999.9999
	// MaxComputeReservation stops a reservation from holding back the whole
	// pool, which would leave submitted jobs waiting forever.
	MaxComputeReservation = 99
)

// Config configures the fairshare policy (seed 003, AWS Batch
// fair-share scheduling). Jobs are grouped by their share identifier; the
// share with the lowest weighted usage gets the next slot. The zero value is
// valid: every share weighs 1, usage is the current usage, nothing is
// reserved.
type Config struct {
	// Shares sets weight factors and names the shares a compute reservation
	// is for. A share that is not listed weighs 1.
	Shares []ShareWeight `yaml:"shares,omitempty" json:"shares,omitempty"`
	// ShareDecaySeconds is the window over which past usage counts: the time
	// constant of its exponential decay. 0 looks at current usage only.
	ShareDecaySeconds int `yaml:"shareDecaySeconds,omitempty" json:"shareDecaySeconds,omitempty"`
	// ComputeReservation is the percentage (0-99) of the pool held back for
	// shares that have no active jobs, so that their first jobs start at
	// once instead of waiting for others' tasks to finish.
	ComputeReservation int `yaml:"computeReservation,omitempty" json:"computeReservation,omitempty"`
	// ReservationModel is ReservationEven (default) or
	// ReservationExponential.
	ReservationModel string `yaml:"reservationModel,omitempty" json:"reservationModel,omitempty"`
	// Preemption, when set, stops tasks of shares above their fair share
	// for shares below theirs (see Preemption). Without it the policy
	// never stops a task, as AWS Batch.
	Preemption *Preemption `yaml:"preemption,omitempty" json:"preemption,omitempty"`
}

// MaxShareLen is the longest share identifier a job can name (spec's
// limit on a job's share): a policy entry longer than that could never be
// used.
const MaxShareLen = 256

// ShareWeight is one share named in a fairshare policy.
type ShareWeight struct {
	// Share is a share identifier, or with a final '*' a share identifier
	// prefix (AWS Batch's shareIdentifier): "UserA*" weighs every share
	// that starts with "UserA" and has no exact entry of its own; among
	// prefixes the longest that matches applies.
	Share string `yaml:"share" json:"share"`
	// WeightFactor divides capacity: a share gets capacity in proportion to
	// 1/WeightFactor, so 0.5 gets twice what 1 gets. Omitted means 1, as in
	// AWS Batch; it is a pointer so that an explicit 0 is an error rather
	// than silently the default.
	WeightFactor *float64 `yaml:"weightFactor,omitempty" json:"weightFactor,omitempty"`
}

// Weight returns a pointer to w, for ShareWeight literals in Go.
func Weight(w float64) *float64 { return &w }

// Prefix returns the entry's prefix and true when it is a prefix entry
// (its share ends in '*').
func (s ShareWeight) Prefix() (string, bool) {
	return strings.CutSuffix(s.Share, "*")
}

// checkShareName says why name, a policy entry, could never weigh a job's
// share, or "".
func checkShareName(name string) string {
	prefix, isPrefix := strings.CutSuffix(name, "*")
	switch {
	case isPrefix && prefix == "":
		return "a prefix needs at least one character before '*' (a share the policy does not name weighs 1)"
	case strings.Contains(prefix, "*"):
		return fmt.Sprintf("%.40q: '*' may only end a share identifier prefix (UserA* weighs every share that starts with UserA)", name)
	case len(prefix) > MaxShareLen:
		return fmt.Sprintf("longer than %d bytes, the longest share a job can name", MaxShareLen)
	case strings.IndexFunc(prefix, unicode.IsControl) >= 0:
		return fmt.Sprintf("%.40q: no job's share can contain a control character", name)
	}
	return ""
}

// CheckJob implements policy.JobChecker: a job's share is an identifier,
// never a prefix, so a '*' in it (which would read as a prefix entry of the
// policy, and which AWS Batch's identifiers cannot hold) is refused at
// submission. A nil c checks the same.
func (c *Config) CheckJob(j *model.Job) error {
	if strings.Contains(j.Share, "*") {
		return model.Invalid("share", "%.40q: a share identifier cannot contain '*', which marks a prefix in a fairshare policy's shares", j.Share)
	}
	return nil
}

// Weight returns the share's weight factor, 1 when it was omitted.
func (s ShareWeight) Weight() float64 {
	if s.WeightFactor == nil {
		return 1
	}
	return *s.WeightFactor
}

// Model returns the reservation model, ReservationEven when unset.
func (c *Config) Model() string {
	if c == nil || c.ReservationModel == "" {
		return ReservationEven
	}
	return c.ReservationModel
}

// Validate reports the first problem in c as a *model.FieldError whose
// path starts at the block's key (fairshare.shares[1].weightFactor). A nil
// config is valid: it means all defaults.
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	first := map[string]int{}
	for i, s := range c.Shares {
		if s.Share == "" {
			return model.Invalid(fmt.Sprintf("fairshare.shares[%d].share", i), "required")
		}
		if why := checkShareName(s.Share); why != "" {
			return model.Invalid(fmt.Sprintf("fairshare.shares[%d].share", i), "%s", why)
		}
		if j, dup := first[s.Share]; dup {
			return model.Invalid(fmt.Sprintf("fairshare.shares[%d].share", i), "share %q is already named at shares[%d]", s.Share, j)
		}
		first[s.Share] = i
		// Written so that NaN fails too.
		if w := s.Weight(); !(w >= MinWeightFactor && w <= MaxWeightFactor) {
			return model.Invalid(fmt.Sprintf("fairshare.shares[%d].weightFactor", i), "must be between %g and %g", MinWeightFactor, MaxWeightFactor)
		}
	}
	if c.ShareDecaySeconds < 0 {
		return model.Invalid("fairshare.shareDecaySeconds", "must not be negative")
	}
	if c.ComputeReservation < 0 || c.ComputeReservation > MaxComputeReservation {
		return model.Invalid("fairshare.computeReservation", "must be between 0 and %d", MaxComputeReservation)
	}
	switch c.ReservationModel {
	case "", ReservationEven, ReservationExponential:
	default:
		return model.Invalid("fairshare.reservationModel", "unknown model %q (known: %s, %s)", c.ReservationModel, ReservationEven, ReservationExponential)
	}
	if c.Preemption != nil {
		if c.ShareDecaySeconds > 0 {
			// With a decay window the policy serves by past usage, so the
			// freed slots could go back to the share they were taken from.
			return model.Invalid("fairshare.preemption", "works on current usage only: leave out shareDecaySeconds (or set it to 0), or leave out preemption")
		}
		return c.Preemption.validate()
	}
	return nil
}
