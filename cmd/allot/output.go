package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/client-go/util/jsonpath"
)

// Output controls, as kubectl has them: -o table (the default), wide (more
// columns), json, yaml, jsonpath=EXPR, jsonpath-file=FILE,
// go-template=TEMPLATE and go-template-file=FILE, and --no-headers for the
// tables. Templates and JSONPath see the API's JSON (its field names), the
// same document -o json prints.

// outputKinds are the -o forms, with "=" for those that take an argument.
var outputKinds = []string{"table", "wide", "json", "yaml", "jsonpath=", "jsonpath-file=", "go-template=", "go-template-file="}

// format is a parsed -o: its kind and, for templates, the template ready
// to run.
type format struct {
	kind string // table, wide, json, yaml, jsonpath, go-template
	jp   *jsonpath.JSONPath
	tpl  *template.Template
}

// parseFormat reads an -o value.
func parseFormat(s string) (format, error) {
	kind, arg, hasArg := strings.Cut(s, "=")
	switch kind {
	case "table", "wide", "json", "yaml":
		if hasArg {
			return format{}, fmt.Errorf("-o %s takes no argument", kind)
		}
		return format{kind: kind}, nil
	case "jsonpath-file", "go-template-file":
		b, err := os.ReadFile(arg)
		if err != nil {
			return format{}, fmt.Errorf("-o %s: %w", kind, err)
		}
		kind, arg = strings.TrimSuffix(kind, "-file"), string(b)
	}
	switch kind {
	case "jsonpath":
		if strings.TrimSpace(arg) == "" {
			return format{}, fmt.Errorf(`-o jsonpath: give an expression: -o jsonpath='{.jobs[*].id}'`)
		}
		jp := jsonpath.New("output").AllowMissingKeys(true)
		if err := jp.Parse(relaxedJSONPath(arg)); err != nil {
			return format{}, fmt.Errorf("-o jsonpath: %w", err)
		}
		return format{kind: kind, jp: jp}, nil
	case "go-template":
		if strings.TrimSpace(arg) == "" {
			return format{}, fmt.Errorf(`-o go-template: give a template: -o go-template='{{range .jobs}}{{.id}}{{"\n"}}{{end}}'`)
		}
		tpl, err := template.New("output").Funcs(templateFuncs).Parse(arg)
		if err != nil {
			return format{}, fmt.Errorf("-o go-template: %w", err)
		}
		return format{kind: kind, tpl: tpl}, nil
	}
	return format{}, fmt.Errorf("-o: unknown output %q (known: %s)", s, strings.Join(outputKinds, ", "))
}

// relaxedJSONPath accepts what kubectl accepts: an expression without
// braces ({} added) and without the leading dot.
func relaxedJSONPath(s string) string {
	if strings.Contains(s, "{") {
		return s
	}
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, ".") && !strings.HasPrefix(s, "$") {
		s = "." + s
	}
	return "{" + s + "}"
}

// templateFuncs are the functions go-template offers beyond text/template's.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"join": func(sep string, v []any) string {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, sep)
	},
}

// generic is v as the API's JSON decoded into maps and slices: what the
// templates and YAML see, so that field names are the API's. Numbers stay
// json.Number, so IDs and byte counts print as they are.
func generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	return out, d.Decode(&out)
}

// write prints v in the form of fm; table prints the table forms.
func (fm format) write(w io.Writer, v any, table func(io.Writer) error) error {
	switch fm.kind {
	case "json":
		return writeJSON(w, v)
	case "yaml":
		// Through JSON, so YAML keys are the API's field names.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var g any
		if err := yaml.Unmarshal(b, &g); err != nil {
			return err
		}
		out, err := yaml.Marshal(g)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case "jsonpath":
		g, err := generic(v)
		if err != nil {
			return err
		}
		if err := fm.jp.Execute(w, g); err != nil {
			return fmt.Errorf("-o jsonpath: %w", err)
		}
		return nil
	case "go-template":
		g, err := generic(v)
		if err != nil {
			return err
		}
		if err := fm.tpl.Execute(w, g); err != nil {
			return fmt.Errorf("-o go-template: %w", err)
		}
		return nil
	}
	return table(w)
}

// isTable reports whether fm prints a table (table or wide).
func (fm format) isTable() bool { return fm.kind == "table" || fm.kind == "wide" }

// tab is a table being printed: columns aligned by a tabwriter, the header
// left out with --no-headers, the wide columns shown only with -o wide.
type tab struct {
	tw        *tabwriter.Writer
	wide      bool
	noHeaders bool
}

// newTab starts a table on w for the flags' output form.
func (f *clientFlags) newTab(w io.Writer) *tab {
	return &tab{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), wide: f.format.kind == "wide", noHeaders: f.noHeaders}
}

// header writes the header: cols, then wide's when -o wide.
func (t *tab) header(cols []string, wide ...string) {
	if t.noHeaders {
		return
	}
	t.row(cols, wide...)
}

// row writes a row: cells, then wide's when -o wide.
func (t *tab) row(cells []string, wide ...string) {
	if t.wide {
		cells = append(cells[:len(cells):len(cells)], wide...)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// flush ends the table.
func (t *tab) flush() error { return t.tw.Flush() }

// noHeaderWriter drops the first line written to it: the header of a table
// a command prints itself, under --no-headers.
type noHeaderWriter struct {
	w    io.Writer
	done bool
}

func (n *noHeaderWriter) Write(p []byte) (int, error) {
	if n.done {
		return n.w.Write(p)
	}
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		return len(p), nil
	}
	n.done = true
	if _, err := n.w.Write(p[i+1:]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// tabWriter is the tabwriter a command's own table goes through: its
// first line, the header, is dropped with --no-headers.
func (f *clientFlags) tabWriter(w io.Writer) *tabwriter.Writer {
	if f.noHeaders {
		w = &noHeaderWriter{w: w}
	}
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// human renders a duration as people read one at a glance: 45s, 3m12s,
// 1h05m, 2d3h; under a second, in milliseconds.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + human(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// span is how long something that started at from has lasted: until to,
// or until now while to is nil. "" when it has not started.
func span(from *time.Time, to *time.Time, now time.Time) string {
	if from == nil || from.IsZero() {
		return ""
	}
	end := now
	if to != nil && !to.IsZero() {
		end = *to
	}
	return human(end.Sub(*from))
}

// bytesText renders a byte count with binary units: 512B, 12.3Mi, 2.0Gi.
func bytesText(n int64) string {
	if n <= 0 {
		return ""
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f%ci", v, "KMGTP"[i])
}

// cpuText renders CPU seconds: 0.25s, 12s, 3m12s.
func cpuText(s float64) string {
	switch {
	case s <= 0:
		return ""
	case s < 10:
		return fmt.Sprintf("%.2fs", s)
	}
	return human(time.Duration(s * float64(time.Second)))
}
