package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// The flags of `allot submit` that write or change the job document, as
// sbatch's do: --wrap makes a one-entry job of a command, --set fills the
// document's ${{ KEY }} variables, --id and --id-prefix name the job anew
// (so that a file naming its ID can be submitted again), and --queue,
// --share and --dependency set those fields over the document's. The
// server checks the result as it checks any document.

// submitOptions holds those flags.
type submitOptions struct {
	wrap, name     string
	count          int
	cpu, memory    string
	gpus           int
	timeout        string
	id, idPrefix   string
	queue, share   string
	dependency     string
	set            []string
	resourcesGiven func() bool
	// changed reports whether a flag was given: a flag written as 0 is a
	// value, not the flag left out.
	changed func(name string) bool
}

func (o *submitOptions) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.wrap, "wrap", "", "submit a job of one command, run with sh -c, instead of a file (sbatch --wrap)")
	fl.StringVar(&o.name, "name", "", "with --wrap: the task's name (default main)")
	fl.IntVar(&o.count, "count", 0, "with --wrap: run the command as this many tasks (NAME-0, NAME-1, ...)")
	fl.StringVar(&o.cpu, "cpu", "", "with --wrap: CPU per task (2, 500m)")
	fl.StringVar(&o.memory, "memory", "", "with --wrap: memory per task (512Mi, 4Gi)")
	fl.IntVar(&o.gpus, "gpus", 0, "with --wrap: GPUs per task")
	fl.StringVar(&o.timeout, "timeout", "", "with --wrap: stop a task that runs longer (30s, 2h)")
	fl.StringVar(&o.id, "id", "", "the job's ID, over the document's")
	fl.StringVar(&o.idPrefix, "id-prefix", "", "a new ID PREFIX-<time>-<random> for each job, over the document's: submit the same file again")
	fl.StringVar(&o.queue, "queue", "", "the job's queue, over the document's")
	fl.StringVar(&o.share, "share", "", "the job's share, over the document's")
	fl.StringVar(&o.dependency, "dependency", "", "jobs to wait for, added to the document's dependsOn: TYPE:ID[:ID...][,TYPE:ID...] with TYPE after, afterok, afternotok or afterany (sbatch --dependency)")
	fl.StringArrayVar(&o.set, "set", nil, "KEY=VALUE: the value of the variable ${{ KEY }} in the job document (repeat for each)")
	o.changed = fl.Changed
	o.resourcesGiven = func() bool {
		for _, n := range []string{"name", "count", "cpu", "memory", "gpus", "timeout"} {
			if fl.Changed(n) {
				return true
			}
		}
		return false
	}
}

// check refuses flags that do not go together, before anything is read.
func (o *submitOptions) check(args []string) error {
	switch {
	case o.wrap != "" && len(args) > 0:
		return fmt.Errorf("--wrap submits a command, not %s: give one or the other", args[0])
	case o.wrap == "" && len(args) == 0:
		return errors.New("give a job file (- for standard input, or a directory), or --wrap 'COMMAND'")
	case o.wrap == "" && o.resourcesGiven():
		return errors.New("--name, --count, --cpu, --memory, --gpus and --timeout go with --wrap; a job file says them in its tasks")
	case o.wrap != "" && len(o.set) > 0:
		return errors.New("--set fills ${{ KEY }} variables of a job file; --wrap has none")
	case o.id != "" && o.idPrefix != "":
		return errors.New("--id and --id-prefix both name the job: give one")
	case o.id != "" && !model.ValidName(o.id):
		return fmt.Errorf("--id %q: %s", o.id, model.NameRule)
	case o.idPrefix != "" && (!model.ValidName(o.idPrefix) || len(o.idPrefix) > model.MaxNameLen-len("-20060102-150405-0123456789")):
		return fmt.Errorf("--id-prefix %q: %s, and at most %d characters", o.idPrefix, model.NameRule, model.MaxNameLen-len("-20060102-150405-0123456789"))
	case o.changed("count") && o.count < 1:
		// As count: 0 in a document: a written 0 is a value, and refused.
		return fmt.Errorf("--count %d: must be at least 1: leave --count out for one task", o.count)
	case o.gpus < 0:
		return fmt.Errorf("--gpus %d: must not be negative", o.gpus)
	}
	if _, err := o.dependencies(); err != nil {
		return err
	}
	_, err := o.vars()
	return err
}

// dependencies parses --dependency: TYPE:ID[:ID...], comma-separated.
func (o *submitOptions) dependencies() ([]model.JobDependency, error) {
	if o.dependency == "" {
		return nil, nil
	}
	var out []model.JobDependency
	for _, part := range strings.Split(o.dependency, ",") {
		if strings.Contains(part, "?") {
			return nil, fmt.Errorf("--dependency %q: `?` (any of) is not supported: a job waits for all its dependencies; write afterok:a:b, or afterok:a,afterok:b", o.dependency)
		}
		fields := strings.Split(part, ":")
		typ := model.DependencyType(fields[0])
		if !typ.Known() || len(fields) < 2 {
			return nil, fmt.Errorf("--dependency %q: write TYPE:ID[:ID...], TYPE one of after, afterok, afternotok, afterany (several: separate with commas)", part)
		}
		for _, id := range fields[1:] {
			if !model.ValidName(id) {
				return nil, fmt.Errorf("--dependency %q: %q is not a job ID", part, id)
			}
			out = append(out, model.JobDependency{Job: id, Type: typ})
		}
	}
	return out, nil
}

// vars parses the --set flags.
func (o *submitOptions) vars() (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range o.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !spec.ValidVarName(k) {
			return nil, fmt.Errorf("--set %q: write KEY=VALUE, KEY a name of letters, digits, '_', '-' and '.'", kv)
		}
		out[k] = v
	}
	return out, nil
}

// wrapped is the job document --wrap stands for, as JSON.
func (o *submitOptions) wrapped() []byte {
	task := map[string]any{"name": "main", "run": o.wrap}
	if o.name != "" {
		task["name"] = o.name
	}
	if o.count > 0 {
		task["count"] = o.count
	}
	res := map[string]any{}
	if o.cpu != "" {
		res["cpu"] = o.cpu
	}
	if o.memory != "" {
		res["memory"] = o.memory
	}
	if o.gpus > 0 {
		res["gpus"] = o.gpus
	}
	if len(res) > 0 {
		task["resources"] = res
	}
	if o.timeout != "" {
		task["timeout"] = o.timeout
	}
	b, _ := json.Marshal(map[string]any{"tasks": []any{task}})
	return b
}

// checkVarsUsed refuses a --set that no document names: a typo in a key
// would otherwise pass silently.
func (o *submitOptions) checkVarsUsed(docs [][]byte) error {
	vars, err := o.vars()
	if err != nil || len(vars) == 0 {
		return err
	}
	named := map[string]bool{}
	for _, d := range docs {
		for _, n := range spec.Vars(d) {
			named[n] = true
		}
	}
	var unused []string
	for k := range vars {
		if !named[k] {
			unused = append(unused, k)
		}
	}
	if len(unused) == 0 {
		return nil
	}
	sort.Strings(unused)
	have := make([]string, 0, len(named))
	for n := range named {
		have = append(have, n)
	}
	sort.Strings(have)
	names := "no variables"
	if len(have) > 0 {
		names = "only " + strings.Join(have, ", ")
	}
	return fmt.Errorf("--set %s: the job document has no ${{ %s }} (it names %s)", unused[0], unused[0], names)
}

// edit applies the flags to one job document: its variables, then the
// fields the flags set. A document the fields were set in is sent as
// JSON (contentType says so), whose lines are not the user's: lineOf then
// maps an error's field to its line in doc (0 for a field a flag set), for
// mapLines; it is nil when doc is sent as the user wrote it.
func (o *submitOptions) edit(doc []byte, contentType string) ([]byte, string, func(field string) int, error) {
	vars, err := o.vars()
	if err != nil {
		return nil, "", nil, err
	}
	doc, err = spec.ExpandVars(doc, vars)
	var ve *spec.VarError
	if errors.As(err, &ve) {
		return nil, "", nil, fmt.Errorf("line %d: ${{ %s }} is not set: give --set %s=VALUE", ve.Line, ve.Name, ve.Name)
	}
	if err != nil {
		return nil, "", nil, err
	}
	deps, _ := o.dependencies()
	if o.id == "" && o.idPrefix == "" && o.queue == "" && o.share == "" && len(deps) == 0 {
		return doc, contentType, nil, nil
	}
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil || m == nil {
		// Left as it is, for the server to say what is wrong with it.
		return doc, contentType, nil, nil
	}
	var root yaml.Node
	_ = yaml.Unmarshal(doc, &root) // read as m was
	list, _ := m["dependsOn"].([]any)
	written := len(list) // dependsOn entries of the document; the flags' follow
	switch {
	case o.id != "":
		m["id"] = o.id
	case o.idPrefix != "":
		m["id"] = spec.NewJobIDWithPrefix(o.idPrefix, time.Now())
	}
	if o.queue != "" {
		m["queue"] = o.queue
	}
	if o.share != "" {
		m["share"] = o.share
	}
	if len(deps) > 0 {
		for _, d := range deps {
			list = append(list, map[string]any{"job": d.Job, "type": string(d.Type)})
		}
		m["dependsOn"] = list
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, "", nil, fmt.Errorf("the job document with the flags' fields: %w", err)
	}
	lineOf := func(field string) int {
		if o.flagSets(field, written) {
			return 0
		}
		return spec.LineOf(&root, field)
	}
	return out, "application/json", lineOf, nil
}

// flagSets reports whether a field of an edited document is one a flag
// set: the document has no line for it. written is how many dependsOn
// entries the document itself has.
func (o *submitOptions) flagSets(field string, written int) bool {
	top, _, _ := strings.Cut(field, ".")
	switch {
	case top == "id":
		return o.id != "" || o.idPrefix != ""
	case top == "queue":
		return o.queue != ""
	case top == "share":
		return o.share != ""
	case strings.HasPrefix(top, "dependsOn["):
		var i int
		_, err := fmt.Sscanf(top, "dependsOn[%d]", &i)
		return err == nil && i >= written
	}
	return false
}

// mapLines gives the lines of err, an answer to a document edit
// re-encoded, by lineOf; err is returned, changed or not.
func mapLines(err error, lineOf func(field string) int) error {
	var e *client.Error
	if lineOf != nil && errors.As(err, &e) {
		e.MapLines(lineOf)
	}
	return err
}

// editAll applies the flags to each document of a bulk submission.
func (o *submitOptions) editAll(docs []jobDocument) ([]jobDocument, error) {
	if o.id != "" && len(docs) > 1 {
		return nil, fmt.Errorf("--id names one job, and %d were given: use --id-prefix", len(docs))
	}
	bodies := make([][]byte, len(docs))
	for i, d := range docs {
		bodies[i] = d.body
	}
	if err := o.checkVarsUsed(bodies); err != nil {
		return nil, err
	}
	vars, err := o.vars()
	if err != nil {
		return nil, err
	}
	out := make([]jobDocument, len(docs))
	for i, d := range docs {
		var ve *spec.VarError
		if _, err := spec.ExpandVars(d.body, vars); errors.As(err, &ve) {
			// The line in the file, not in the document.
			return nil, fmt.Errorf("%s:%d: ${{ %s }} is not set: give --set %s=VALUE", d.file, d.line+ve.Line-1, ve.Name, ve.Name)
		}
		body, _, lineOf, err := o.edit(d.body, "")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", d.file, d.line, err)
		}
		d.body = body
		if lineOf != nil {
			// The file's lines: the document's, from the line it starts on.
			start := d.line
			d.lineOf = func(field string) int {
				if n := lineOf(field); n > 0 {
					return start + n - 1
				}
				return 0
			}
		}
		out[i] = d
	}
	return out, nil
}
