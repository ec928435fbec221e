package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Limits on what a runnable task carries.
const (
	MaxEnv         = 256
	MaxCommandArgs = 1024
	MaxScriptBytes = 64 << 10
)

// refRE matches a result reference: ${tasks.NAME.result.FIELD}.
var refRE = regexp.MustCompile(`\$\{tasks\.([A-Za-z0-9_.-]+?)\.result\.([A-Za-z0-9_-]+)\}`)

// envKeyRE is what a portable environment variable name looks like.
var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckRunnable checks what a job submitted to the server must have beyond
// a scenario job: each task runs something (run or command, not both), uses
// no scenario-only fields, and references only results of tasks it needs.
// It expects a job that Expand accepted.
func (j Job) CheckRunnable(path string) error {
	var c errs
	p := func(f string) string { return join(path, f) }
	j.checkSizes(&c, p)
	j.checkRunnable(&c, p)
	return c.err()
}

// checkRunnable checks each task's fields and result references.
func (j Job) checkRunnable(c *errs, p func(string) string) {
	g := newEntryGraph(j.Tasks)
	counts := map[string]int{}
	for _, t := range j.Tasks {
		counts[t.Name] = t.Count
	}
	// A reference to a task the entry does not need directly is a
	// question for ancestry, answered for all of them at once.
	type reference struct {
		field, name string
		from, to    int // entries; to is -1 when no entry has the name
		direct      bool
	}
	var refs []reference
	for i, t := range j.Tasks {
		tp := p(fmt.Sprintf("tasks[%d]", i))
		switch {
		case t.Run == "" && len(t.Command) == 0:
			c.add(tp, "a task needs run (a shell script) or command (a program and its arguments)")
		case t.Run != "" && len(t.Command) > 0:
			c.add(tp+".command", "set run or command, not both")
		}
		if len(t.Run) > MaxScriptBytes {
			c.add(tp+".run", "is %d bytes, more than %d", len(t.Run), MaxScriptBytes)
		}
		if len(t.Command) > MaxCommandArgs {
			c.add(tp+".command", "has %d entries, more than %d", len(t.Command), MaxCommandArgs)
		}
		if len(t.Command) > 0 && t.Command[0] == "" {
			c.add(tp+".command[0]", "the program must not be empty")
		}
		if t.Running != 0 {
			c.add(tp+".running", "only scenarios may say a task is already running")
		}
		if t.RunningFor != 0 {
			c.add(tp+".runningFor", "only scenarios may say how long a task has run")
		}
		if t.Fails != 0 {
			c.add(tp+".fails", "only scenarios may make a task fail")
		}
		if len(t.Env) > MaxEnv {
			c.add(tp+".env", "has %d entries, more than %d", len(t.Env), MaxEnv)
		}
		for _, k := range sortedKeys(t.Env) {
			if len(k) <= MaxEnvKeyLen && !envKeyRE.MatchString(k) {
				c.add(tp+".env."+k, "%q is not a valid environment variable name", k)
			}
		}
		find := func(field, s string) {
			for _, m := range refRE.FindAllStringSubmatch(s, -1) {
				entry := m[1]
				if _, ok := g.index[entry]; !ok {
					// An expanded name (shard-3) refers to its entry (shard).
					if k := strings.LastIndexByte(entry, '-'); k > 0 && counts[entry[:k]] > 1 {
						entry = entry[:k]
					}
				}
				r := reference{field: field, name: m[1], from: i, to: -1}
				if k, ok := g.index[entry]; ok {
					r.to = k
					r.direct = slices.Contains(g.needs[i], k)
				}
				refs = append(refs, r)
			}
			if bad := unresolvedRef(s); bad != "" {
				c.add(field, "%s is not a result reference the run can resolve: write ${tasks.NAME.result.FIELD}, FIELD a top-level field of the result (nested fields are not supported)", bad)
			}
		}
		find(tp+".run", t.Run)
		for k, a := range t.Command {
			find(fmt.Sprintf("%s.command[%d]", tp, k), a)
		}
		for _, k := range sortedKeys(t.Env) {
			find(tp+".env."+k, t.Env[k])
		}
	}
	needs := func(from, to int) bool { return false }
	if order, cyc := g.order(); cyc == "" {
		anc := newAncestry(g, order)
		var froms []int
		for _, r := range refs {
			if r.to >= 0 && !r.direct {
				anc.ask(r.to)
				froms = append(froms, r.from)
			}
		}
		if len(froms) > 0 {
			needs = anc.answers(froms)
		}
	}
	for _, r := range refs {
		if r.to < 0 || !r.direct && !needs(r.from, r.to) {
			c.add(r.field, "references the result of %q, which this task does not need", r.name)
		}
	}
}

// Substitute replaces each ${tasks.NAME.result.FIELD} in s with the FIELD of
// the JSON object task NAME published. Strings are inserted as they are,
// other values as JSON. A missing result or field is an error naming it.
func Substitute(s string, results map[string]json.RawMessage) (string, error) {
	var firstErr error
	out := refRE.ReplaceAllStringFunc(s, func(ref string) string {
		m := refRE.FindStringSubmatch(ref)
		raw, ok := results[m[1]]
		if !ok || len(raw) == 0 {
			if firstErr == nil {
				firstErr = fmt.Errorf("task %q published no result", m[1])
			}
			return ref
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("the result of task %q is not a JSON object", m[1])
			}
			return ref
		}
		v, ok := obj[m[2]]
		if !ok {
			if firstErr == nil {
				firstErr = fmt.Errorf("the result of task %q has no field %q", m[1], m[2])
			}
			return ref
		}
		var str string
		if json.Unmarshal(v, &str) == nil {
			return str
		}
		return string(v)
	})
	return out, firstErr
}

// refStart is how every result reference begins. No shell variable name
// has a dot, so a "${tasks." that is not a whole reference is one the run
// cannot resolve: Substitute leaves it, and sh stops on it.
const refStart = "${tasks."

// unresolvedRef returns the first text in s that begins as a result
// reference and is not one (${tasks.p.result.a.b}: nested fields), up to
// its closing brace and at most 80 bytes; "" when there is none.
func unresolvedRef(s string) string {
	for rest := s; ; {
		i := strings.Index(rest, refStart)
		if i < 0 {
			return ""
		}
		rest = rest[i:]
		if loc := refRE.FindStringIndex(rest); loc == nil || loc[0] != 0 {
			end := strings.IndexAny(rest, "} \t\n")
			switch {
			case end < 0:
				end = len(rest)
			case rest[end] == '}':
				end++
			}
			return rest[:min(end, 80)]
		}
		rest = rest[len(refStart):]
	}
}

// References lists the task names s references results of.
func References(s string) []string {
	var out []string
	for _, m := range refRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
