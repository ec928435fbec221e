package classload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Config configures the classload policy (seed 004, Twitter Scoot's
// load-based scheduling). Jobs fall into classes by their requestor; each
// class is entitled to a percentage of the queue's slots, and slots a class
// leaves unused are loaned to the others.
//
// Requestors are matched against RequestorMap in list order and the first
// match wins. A requestor that matches no entry goes to the class with the
// lowest percentage; when several classes share that lowest percentage, the
// one listed last in Classes takes it. Listing a catch-all pattern (".*")
// last overrides this default.
//
// Percentages need not sum to 100: they are normalized (each class but the
// highest gets floor(pct × 100 / Σ pct), the highest takes the rest), which
// leaves percentages that do sum to 100 unchanged. At least one class must
// have a positive percentage.
//
// The durations decode from strings such as "5m" in both YAML and JSON, so
// one config file reads the same in either form.
type Config struct {
	// Classes lists the job classes with their load percentages. Its order
	// breaks ties between equal percentages: the earlier class counts as the
	// higher one.
	Classes []LoadClass `yaml:"classes" json:"classes"`
	// RequestorMap maps requestors to classes by regular expression.
	RequestorMap []RequestorRule `yaml:"requestorMap,omitempty" json:"requestorMap,omitempty"`
	// RebalanceThreshold is the delta entitlement spread, in percentage
	// points, above which the policy starts its rebalance clock; 0 turns
	// rebalancing off.
	RebalanceThreshold int `yaml:"rebalanceThreshold,omitempty" json:"rebalanceThreshold,omitempty"`
	// RebalanceMinimumDuration is how long the spread must stay above the
	// threshold before running tasks are stopped, so a short burst of
	// loaned work is not preempted.
	RebalanceMinimumDuration time.Duration `yaml:"rebalanceMinimumDuration,omitempty" json:"rebalanceMinimumDuration,omitempty"`
}

// LoadClass is one job class and its share of the queue's slots.
type LoadClass struct {
	Name string `yaml:"name" json:"name"`
	// Percent is the class's load percentage, 0-100. A 0% class never
	// starts tasks: it is where unmatched requestors park by default.
	Percent int `yaml:"percent" json:"percent"`
}

// RequestorRule sends jobs whose requestor matches Pattern (a Go regular
// expression, unanchored) to Class.
type RequestorRule struct {
	Class   string `yaml:"class" json:"class"`
	Pattern string `yaml:"pattern" json:"pattern"`
}

// Validate checks the block and returns the first problem as a
// *model.FieldError whose path starts at the block's key (e.g.
// "classload.classes[1].percent", "must be between 0 and 100"), so a user
// can find it in a config file and the API can name the field.
func (c *Config) Validate() error {
	if c == nil {
		return model.Invalid(Name, "required when kind is %q", Name)
	}
	if len(c.Classes) == 0 {
		return model.Invalid("classload.classes", "at least one class is required")
	}
	seen := make(map[string]int, len(c.Classes))
	sum := 0
	for i, cl := range c.Classes {
		path := fmt.Sprintf("classload.classes[%d]", i)
		switch {
		case strings.TrimSpace(cl.Name) == "":
			return model.Invalid(path+".name", "required")
		case cl.Percent < 0 || cl.Percent > 100:
			return model.Invalid(path+".percent", "must be between 0 and 100, got %d", cl.Percent)
		}
		if first, dup := seen[cl.Name]; dup {
			return model.Invalid(path+".name", "class %q is already defined at classes[%d]", cl.Name, first)
		}
		seen[cl.Name] = i
		sum += cl.Percent
	}
	if sum == 0 {
		return model.Invalid("classload.classes", "every percent is 0; at least one class needs a positive percent")
	}
	for i, r := range c.RequestorMap {
		path := fmt.Sprintf("classload.requestorMap[%d]", i)
		if _, ok := seen[r.Class]; !ok {
			return model.Invalid(path+".class", "unknown class %q", r.Class)
		}
		if _, err := regexp.Compile(r.Pattern); err != nil {
			return &model.FieldError{Path: path + ".pattern", Msg: "does not compile: " + err.Error(), Err: err}
		}
	}
	if c.RebalanceThreshold < 0 {
		return model.Invalid("classload.rebalanceThreshold", "must not be negative, got %d", c.RebalanceThreshold)
	}
	if c.RebalanceMinimumDuration < 0 {
		return model.Invalid("classload.rebalanceMinimumDuration", "must not be negative, got %s", c.RebalanceMinimumDuration)
	}
	return nil
}

// classLoadJSON is Config without its methods; the duration field
// of the outer struct shadows the embedded one in encoding/json.
type classLoadJSON Config

// MarshalJSON writes the minimum duration as a string ("5m0s"), the form
// UnmarshalJSON and the YAML decoder read.
func (c Config) MarshalJSON() ([]byte, error) {
	out := struct {
		classLoadJSON
		RebalanceMinimumDuration string `json:"rebalanceMinimumDuration,omitempty"`
	}{classLoadJSON: classLoadJSON(c)}
	if c.RebalanceMinimumDuration != 0 {
		out.RebalanceMinimumDuration = c.RebalanceMinimumDuration.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the minimum duration from a string such as "5m". A
// bare number is refused: JSON would read it as nanoseconds, which nobody
// means. Unknown keys are refused too. Errors are *model.FieldError, their
// path from the block's key.
func (c *Config) UnmarshalJSON(b []byte) error {
	var in struct {
		classLoadJSON
		RebalanceMinimumDuration json.RawMessage `json:"rebalanceMinimumDuration,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt key must not silently drop a setting
	if err := dec.Decode(&in); err != nil {
		return &model.FieldError{Path: Name, Msg: err.Error(), Err: err}
	}
	*c = Config(in.classLoadJSON)
	c.RebalanceMinimumDuration = 0
	raw := in.RebalanceMinimumDuration
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return model.Invalid("classload.rebalanceMinimumDuration", "want a duration string such as \"5m\", got %s", raw)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return &model.FieldError{Path: "classload.rebalanceMinimumDuration", Msg: err.Error(), Err: err}
	}
	c.RebalanceMinimumDuration = d
	return nil
}
