package policy

import (
	"reflect"
	"sort"
	"sync"

	"github.com/allot-sched/allot/internal/model"
)

// JobChecker is Settings that refuse some jobs at submission: a priority
// outside the configured levels, an SLA group the policy does not define.
// It is called on a nil pointer when the block is absent. The error is a
// *model.FieldError naming the job's field (priority, slaGroup).
type JobChecker interface {
	CheckJob(j *model.Job) error
}

// Kind is one policy as the registry knows it.
type Kind struct {
	// Name is the policy's name in configuration: the value of `kind`, and
	// the key of its own block.
	Name string
	// Settings is a nil pointer of the policy's config type, e.g.
	// (*fairshare.Config)(nil); decoding makes values of its type. Nil for
	// a policy without settings (fifo).
	Settings Settings
	// New builds the policy from its block. s is of Settings' type, a nil
	// pointer when the block is absent (nil when Settings is nil). New
	// validates s; its errors are *model.FieldError from the block's key.
	New func(s Settings) (Policy, error)
}

// registry holds the kinds that Register made known.
var registry struct {
	sync.Mutex
	kinds map[string]Kind
}

// Register makes a policy available by kind. The engine registers every
// policy in one list (engine/policies.go), so the set of policies is fixed
// at build time; a test may register one of its own.
func Register(k Kind) {
	registry.Lock()
	defer registry.Unlock()
	if registry.kinds == nil {
		registry.kinds = map[string]Kind{}
	}
	registry.kinds[k.Name] = k
	model.RegisterPolicyBlock(k.Name, k.Settings)
}

// lookup returns the kind named name.
func lookup(name string) (Kind, bool) {
	registry.Lock()
	defer registry.Unlock()
	k, ok := registry.kinds[name]
	return k, ok
}

// New builds the policy cfg names; an empty kind is fifo. Its errors are
// *model.FieldError with paths from the block's root (kind,
// fairshare.shares[0].share).
func New(cfg Config) (Policy, error) {
	k, ok := lookup(kindOf(cfg))
	if !ok {
		return nil, model.Invalid("kind", "unknown policy %q (known: %v)", cfg.Kind, Names())
	}
	s, err := k.settings(cfg.Settings)
	if err != nil {
		return nil, err
	}
	p, err := k.New(s)
	if err != nil {
		return nil, err
	}
	switch Usage(cfg.Usage) {
	case "", UsageSlots:
	case UsageDominant:
		d, ok := p.(DominantPolicy)
		if !ok {
			return nil, model.Invalid("usage", "the %s policy does not measure usage by dominant share (fairshare, classload, priority and sla do); leave usage out, or set slots", k.Name)
		}
		d.Dominant()
	default:
		return nil, model.Invalid("usage", "unknown usage %q (known: slots, dominant)", cfg.Usage)
	}
	return p, nil
}

// CheckJob checks a job against the policy settings of cfg (a priority
// outside the configured levels, an SLA group the sla policy does not
// define), so that such a job is refused at submission.
func CheckJob(cfg Config, j *model.Job) error {
	k, ok := lookup(kindOf(cfg))
	if !ok {
		return nil
	}
	s, err := k.settings(cfg.Settings)
	if err != nil {
		return err
	}
	if c, ok := s.(JobChecker); ok {
		return c.CheckJob(j)
	}
	return nil
}

// settings returns s as k's block: a nil pointer of k's type when s is nil,
// an error when s is another policy's block.
func (k Kind) settings(s Settings) (Settings, error) {
	if k.Settings == nil {
		return nil, nil
	}
	if s == nil {
		return k.Settings, nil
	}
	if reflect.TypeOf(s) != reflect.TypeOf(k.Settings) {
		return nil, model.Invalid(k.Name, "settings of type %T belong to another policy", s)
	}
	return s, nil
}

// Names lists the registered policies, sorted.
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	out := make([]string, 0, len(registry.kinds))
	for n := range registry.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
