package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/allot-sched/allot/internal/model"
)

// Limits on the strings a job carries to the store. Every string a
// submitter sends is kept: in the job's row, in the engine's memory, in
// each lease that hands the task out. Without a bound one submission could
// take the server's memory and slow its restarts; the bounds are generous
// for what each field holds (docs/jobs.md, "Limits").
const (
	// MaxJobSpecBytes bounds a job as stored: its spec, normalised to
	// JSON. A job of many tasks describes them with count, not one by
	// one.
	MaxJobSpecBytes = 1 << 20
	// MaxArgBytes bounds one argument of a command, half of what Linux
	// takes in one argument (MAX_ARG_STRLEN, 128 KiB).
	MaxArgBytes = 64 << 10
	// MaxEnvKeyLen bounds an environment variable's name.
	MaxEnvKeyLen = 256
	// MaxEnvValueBytes bounds an environment variable's value, as an
	// argument.
	MaxEnvValueBytes = 64 << 10
	// MaxPathBytes bounds a path or a URL: a working directory, an
	// input. It is Linux's PATH_MAX.
	MaxPathBytes = 4096
	// MaxValueLen bounds the free-form text fields (requestor, share, SLA
	// group, model, dataset) and label values.
	MaxValueLen = 256
	// MaxLabelValueLen bounds a label value.
	MaxLabelValueLen = MaxValueLen
	// MaxResultBytes bounds the result a task publishes, as the agent
	// bounds the result file: results are substituted into later tasks,
	// they are not outputs.
	MaxResultBytes = 64 << 10
)

// checkLabels checks a map of labels or selector terms: at most MaxLabels
// entries, keys of 1 to MaxNameLen bytes, values of at most MaxValueLen,
// neither with control characters.
func checkLabels(c *errs, path string, m map[string]string) {
	if len(m) > MaxLabels {
		c.add(path, "has %d entries, more than %d", len(m), MaxLabels)
		return
	}
	for _, k := range sortedKeys(m) {
		if v := m[k]; k == "" || len(k) > MaxNameLen || len(v) > MaxValueLen || hasControl(k) || hasControl(v) {
			c.add(path, "label %.40q: keys are 1-%d bytes, values at most %d, neither with control characters", k, MaxNameLen, MaxValueLen)
		}
	}
}

// checkText checks a free-form field: at most max bytes, no control
// characters (they would garble logs and terminals).
func checkText(c *errs, path, s string, max int) {
	switch {
	case len(s) > max:
		c.add(path, "is %d bytes, more than %d", len(s), max)
	case hasControl(s):
		c.add(path, "contains a control character")
	}
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// checkSizes checks the bounds of every string of a job submitted to the
// server, and of the whole job as it is stored.
func (j Job) checkSizes(c *errs, p func(string) string) {
	checkText(c, p("requestor"), j.Requestor, MaxValueLen)
	checkText(c, p("share"), j.Share, MaxValueLen)
	checkText(c, p("slaGroup"), j.SLAGroup, MaxValueLen)
	for _, f := range []struct{ field, v string }{{"queue", j.Queue}, {"endpoint", j.Endpoint}, {"variant", j.Variant}} {
		if f.v != "" && !validName(f.v) {
			c.add(p(f.field), "%.40q is not a valid name: %s", f.v, model.NameRule)
		}
	}
	checkLabels(c, p("selector"), j.Selector)
	for i, in := range j.Inputs {
		checkText(c, p(fmt.Sprintf("inputs[%d]", i)), in, MaxPathBytes)
	}
	for i, t := range j.Tasks {
		tp := p(fmt.Sprintf("tasks[%d]", i))
		for k, a := range t.Command {
			if len(a) > MaxArgBytes {
				c.add(fmt.Sprintf("%s.command[%d]", tp, k), "is %d bytes, more than %d", len(a), MaxArgBytes)
			}
		}
		for _, k := range sortedKeys(t.Env) {
			if len(k) > MaxEnvKeyLen {
				c.add(tp+".env", "the name %.40q is %d bytes, more than %d", k, len(k), MaxEnvKeyLen)
			}
			if v := t.Env[k]; len(v) > MaxEnvValueBytes {
				c.add(tp+".env."+k, "is %d bytes, more than %d", len(v), MaxEnvValueBytes)
			}
		}
		checkText(c, tp+".workdir", t.WorkDir, MaxPathBytes)
		checkText(c, tp+".model", t.Model, MaxValueLen)
		checkText(c, tp+".dataset", t.Dataset, MaxValueLen)
	}
	if len(c.list) > 0 {
		return // the sizes above say what to shorten
	}
	if raw, err := json.Marshal(j); err == nil && len(raw) > MaxJobSpecBytes {
		c.add(p("body"), "the job is %d bytes once normalised to JSON, more than the limit of %d (1 MiB): describe identical tasks with count, and pass large data as inputs",
			len(raw), MaxJobSpecBytes)
	}
}
