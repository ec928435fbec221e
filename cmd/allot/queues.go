package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/api"
)

// queuesTable is allot queues' table: one line per queue with its policy
// in words, then each policy's report of its groups.
func queuesTable(w io.Writer, qs []api.Queue, f *clientFlags) error {
	tw := f.tabWriter(w)
	fmt.Fprintln(tw, "QUEUE\tPRIORITY\tRUNNING\tWAITING\tPOLICY")
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", q.Name, q.Priority, q.Running, q.Waiting, policySummary(q.Policy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, q := range qs {
		if q.Status != nil {
			fmt.Fprintf(w, "\n%s:\n", q.Name)
			printStatus(w, q.Status)
		}
	}
	return nil
}

// policySummary writes a policy block on one line, in the order it is
// written: its kind, then the settings of its block as key=value, a list
// as its items (an item by its first value, its other fields in
// parentheses). The JSON stays in -o json.
func policySummary(raw json.RawMessage) string {
	var root yaml.Node
	if len(raw) == 0 || yaml.Unmarshal(raw, &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return string(raw)
	}
	m := root.Content[0]
	kind := mappingValue(m, "kind")
	if kind == nil {
		return summarize(m)
	}
	var rest []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i].Value, m.Content[i+1]
		switch {
		case k == "kind":
		case k == kind.Value && v.Kind == yaml.MappingNode:
			if s := summarize(v); s != "" {
				rest = append(rest, s)
			}
		default:
			rest = append(rest, k+"="+summarize(v))
		}
	}
	if len(rest) == 0 {
		return kind.Value
	}
	return kind.Value + ": " + strings.Join(rest, ", ")
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// summarize writes a node of a policy block in words (see policySummary).
func summarize(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, n.Content[i].Value+"="+summarize(n.Content[i+1]))
		}
		return strings.Join(parts, ", ")
	case yaml.SequenceNode:
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			if it.Kind != yaml.MappingNode || len(it.Content) < 2 {
				items = append(items, summarize(it))
				continue
			}
			head := summarize(it.Content[1])
			if len(it.Content) > 2 {
				head += "(" + summarize(&yaml.Node{Kind: yaml.MappingNode, Content: it.Content[2:]}) + ")"
			}
			items = append(items, head)
		}
		return strings.Join(items, " ")
	}
	return n.Value
}

// printStatus prints a policy's report (a list of records, one per group)
// as a table: the columns that name the group first (its text fields),
// then running and waiting, then the policy's figures by name.
func printStatus(w io.Writer, status any) {
	raw, _ := json.Marshal(status)
	var rows []map[string]any
	if json.Unmarshal(raw, &rows) != nil || len(rows) == 0 {
		fmt.Fprintf(w, "  %s\n", raw)
		return
	}
	rank := func(c string) int {
		switch _, text := rows[0][c].(string); {
		case text:
			return 0
		case c == "running":
			return 1
		case c == "waiting":
			return 2
		}
		return 3
	}
	var cols []string
	for k := range rows[0] {
		cols = append(cols, k)
	}
	sort.Slice(cols, func(i, j int) bool {
		if ri, rj := rank(cols[i]), rank(cols[j]); ri != rj {
			return ri < rj
		}
		return cols[i] < cols[j]
	})
	heads := make([]string, len(cols))
	for i, c := range cols {
		heads[i] = header(c)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.Join(heads, "\t"))
	for _, r := range rows {
		vals := make([]string, len(cols))
		for i, c := range cols {
			switch v := r[c].(type) {
			case float64:
				vals[i] = strconv.FormatFloat(v, 'g', 4, 64)
			case nil:
				vals[i] = "-"
			default:
				vals[i] = fmt.Sprint(v)
			}
		}
		fmt.Fprintln(tw, "  "+strings.Join(vals, "\t"))
	}
	_ = tw.Flush()
}

// header is a camelCase field name as a column header: "slotSeconds" is
// "SLOT SECONDS".
func header(field string) string {
	var b strings.Builder
	for i, r := range field {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
