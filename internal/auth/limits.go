package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/store"
)

// Scheduling is what a job asks of the scheduler beyond its queue and
// share: the priority and urgency the priority policy (and every queue's
// job order) goes by, the requestor classload maps to a class, the SLA
// group the sla policy guarantees slots to, and the Unix user its tasks
// run as. Each decides what a job takes from other tenants, so a submitter
// may set each only as far as its token's limits (store.TokenLimits) allow.
type Scheduling struct {
	Priority  int
	Urgent    bool
	Requestor string
	SLAGroup  string
	User      string
}

// AllowScheduling reports whether p may give a job the attributes s (nil),
// or which one it may not (a *Denied naming the job's field: priority,
// urgent, requestor, slaGroup or user). An admin has no limits; a token of
// any other role than submitter may not submit at all.
func (p Principal) AllowScheduling(s Scheduling) error {
	for _, err := range []error{
		p.AllowPriority(s.Priority, s.Urgent),
		p.AllowRequestor(s.Requestor),
		p.AllowSLAGroup(s.SLAGroup),
		p.AllowUser(s.User),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// AllowPriority reports whether p may give a job this priority and
// urgency, at submission or later (allot priority). A priority at or below
// the token's maximum is allowed, so a submitter may always lower one.
func (p Principal) AllowPriority(priority int, urgent bool) error {
	if limited, err := p.limited(); !limited {
		return err
	}
	if priority > p.Limits.MaxPriority {
		return &Denied{Field: "priority", Message: fmt.Sprintf("priority %d is above this token's maximum priority %d", priority, p.Limits.MaxPriority)}
	}
	if urgent && !p.Limits.Urgent {
		return &Denied{Field: "urgent", Message: "this token may not make jobs urgent"}
	}
	return nil
}

// AllowRequestor reports whether p may name requestor on a job. No
// requestor is always allowed. A token without a requestor list may name
// only its own name, so that a submitter cannot pass for another requestor
// and take that requestor's classload class.
func (p Principal) AllowRequestor(requestor string) error {
	if limited, err := p.limited(); !limited || requestor == "" {
		return err
	}
	allowed := p.Limits.Requestors
	if len(allowed) == 0 {
		if p.Name != "" && requestor == p.Name {
			return nil
		}
		msg := fmt.Sprintf("requestor %q is not allowed for this token (allowed: none)", requestor)
		if p.Name != "" {
			msg = fmt.Sprintf("requestor %q is not allowed for this token (allowed: its own name %q)", requestor, p.Name)
		}
		return &Denied{Field: "requestor", Message: msg}
	}
	return p.allowNamed("requestor", requestor, allowed)
}

// AllowSLAGroup reports whether p may put a job in SLA group group. No
// group is always allowed (the sla policy itself refuses a job without
// one); a token without a group list may name none.
func (p Principal) AllowSLAGroup(group string) error {
	return p.allowNamed("slaGroup", group, p.Limits.SLAGroups)
}

// AllowUser reports whether p may have a job's tasks run as the Unix user
// user. No user is always allowed (the agent's own choice applies); a
// token without a user list may name none.
func (p Principal) AllowUser(user string) error {
	return p.allowNamed("user", user, p.Limits.Users)
}

// allowNamed checks a job attribute against a list of patterns: empty is
// always allowed, anything else must match one.
func (p Principal) allowNamed(field, value string, patterns []string) error {
	if limited, err := p.limited(); !limited || value == "" {
		return err
	}
	if matchPattern(patterns, value) {
		return nil
	}
	return &Denied{Field: field, Message: fmt.Sprintf("%s %q is not allowed for this token (allowed: %s)", field, value, list(patterns))}
}

// limited reports whether p's limits apply: true for a submitter. For an
// admin it is false with no error (no limits); for any other role false
// with the refusal to submit at all.
func (p Principal) limited() (bool, error) {
	switch p.Role {
	case Admin:
		return false, nil
	case Submitter:
		return true, nil
	}
	return false, p.Allow(SubmitJobs)
}

// SubmitterName is who a job submitted by p records as its submitter: the
// token's name, or its ID when it has none (IDs are public, secrets are
// not). With authentication off nobody is identified, and it is empty.
func (p Principal) SubmitterName() string {
	if p.TokenID == "" {
		return ""
	}
	if p.Name != "" {
		return p.Name
	}
	return p.TokenID
}

// limitLists are the pattern lists of TokenLimits, by the field names the
// API and the errors use.
func limitLists(l store.TokenLimits) []struct {
	field string
	items []string
} {
	return []struct {
		field string
		items []string
	}{{"requestors", l.Requestors}, {"slaGroups", l.SLAGroups}, {"users", l.Users}}
}

// checkLimits adds the errors of a token's limits: only a submitter has
// limits, the maximum priority is not negative, and each list entry is a
// name or a prefix ending in "*".
func checkLimits(role Role, l store.TokenLimits, add func(path, format string, args ...any)) {
	if !slices.Contains(Roles, role) {
		return // the role's own error says enough
	}
	if role != Submitter {
		if l.MaxPriority != 0 {
			add("maxPriority", "a %s token is not limited by a maximum priority; leave it out", role)
		}
		if l.Urgent {
			add("urgent", "a %s token is not limited by urgency; leave it out", role)
		}
		for _, lst := range limitLists(l) {
			if len(lst.items) > 0 {
				add(lst.field, "a %s token is not limited by %s; leave it out", role, lst.field)
			}
		}
		return
	}
	if l.MaxPriority < 0 {
		add("maxPriority", "must not be negative (got %d)", l.MaxPriority)
	}
	for _, lst := range limitLists(l) {
		if len(lst.items) > MaxScopeItems {
			add(lst.field, "more than %d entries", MaxScopeItems)
			continue
		}
		for i, it := range lst.items {
			if msg := checkScopeItem(it, true); msg != "" {
				add(fmt.Sprintf("%s[%d]", lst.field, i), "%s", msg)
			}
		}
	}
}

// tidyLimits sorts the lists of l and drops repeats.
func tidyLimits(l store.TokenLimits) store.TokenLimits {
	l.Requestors, l.SLAGroups, l.Users = tidy(l.Requestors), tidy(l.SLAGroups), tidy(l.Users)
	return l
}

// matchPattern reports whether name matches one of the patterns: an exact
// name, or a prefix followed by "*" ("*" alone matches every name).
func matchPattern(patterns []string, name string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if p == name {
			return true
		}
	}
	return false
}
