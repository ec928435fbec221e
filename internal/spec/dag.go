package spec

import (
	"strings"
)

// The checks of a job's dependencies are linear in its entries and needs:
// a job may have 100,000 entries, and a walk over each entry's ancestors
// (quadratic on a chain) took minutes at a few tens of thousands.

// entryGraph is the dependency graph of a job's task entries: entry i
// needs the entries needs[i] (names that are no entry of the job are left
// out: Expand reports them).
type entryGraph struct {
	names []string
	index map[string]int
	needs [][]int
}

func newEntryGraph(tasks []Task) entryGraph {
	g := entryGraph{names: make([]string, len(tasks)), index: make(map[string]int, len(tasks)), needs: make([][]int, len(tasks))}
	for i, t := range tasks {
		g.names[i] = t.Name
		if _, dup := g.index[t.Name]; !dup {
			g.index[t.Name] = i
		}
	}
	for i, t := range tasks {
		for _, n := range t.Needs {
			if k, ok := g.index[n]; ok {
				g.needs[i] = append(g.needs[i], k)
			}
		}
	}
	return g
}

// order returns the entries in an order where each comes after what it
// needs (Kahn's algorithm), or, when the needs have a cycle, one cycle as
// "a → b → a" (a needs b, which needs a).
func (g entryGraph) order() (order []int, cycle string) {
	n := len(g.names)
	unmet := make([]int, n)
	children := make([][]int, n)
	for i, ns := range g.needs {
		unmet[i] = len(ns)
		for _, k := range ns {
			children[k] = append(children[k], i)
		}
	}
	order = make([]int, 0, n)
	for i := range n {
		if unmet[i] == 0 {
			order = append(order, i)
		}
	}
	for next := 0; next < len(order); next++ {
		for _, c := range children[order[next]] {
			if unmet[c]--; unmet[c] == 0 {
				order = append(order, c)
			}
		}
	}
	if len(order) == n {
		return order, ""
	}
	return nil, g.cycleAmong(unmet)
}

// cycleAmong finds a cycle among the entries Kahn's algorithm could not
// free (unmet > 0): each of them needs another such entry, so following
// those needs from the first one must come back to an entry already seen.
func (g entryGraph) cycleAmong(unmet []int) string {
	start := 0
	for unmet[start] == 0 {
		start++
	}
	at := map[int]int{} // entry → position in path
	var path []int
	for i := start; ; {
		if p, seen := at[i]; seen {
			names := make([]string, 0, len(path)-p+1)
			for _, k := range path[p:] {
				names = append(names, g.names[k])
			}
			return strings.Join(append(names, g.names[i]), " → ")
		}
		at[i] = len(path)
		path = append(path, i)
		for _, k := range g.needs[i] {
			if unmet[k] > 0 {
				i = k
				break
			}
		}
	}
}

// ancestry answers "does entry from need entry target, directly or not?"
// for a set of questions, in one pass over the graph per 64 distinct
// targets: each entry's bit set of targets it reaches is the union of
// those of its needs, built in dependency order.
type ancestry struct {
	g       entryGraph
	order   []int
	targets map[int]int // target → its question index in asked
	asked   []int       // distinct targets, in the order first asked
}

func newAncestry(g entryGraph, order []int) *ancestry {
	return &ancestry{g: g, order: order, targets: map[int]int{}}
}

// ask registers a question about target; answer it with answers.
func (a *ancestry) ask(target int) {
	if _, ok := a.targets[target]; !ok {
		a.targets[target] = len(a.asked)
		a.asked = append(a.asked, target)
	}
}

// answers returns, for each from, whether it needs each target asked:
// reaches(from, target).
func (a *ancestry) answers(froms []int) func(from, target int) bool {
	want := map[int]bool{}
	for _, f := range froms {
		want[f] = true
	}
	known := map[[2]int]bool{}
	mask := make([]uint64, len(a.g.names))
	bit := make([]uint64, len(a.g.names))
	for base := 0; base < len(a.asked); base += 64 {
		chunk := a.asked[base:min(base+64, len(a.asked))]
		for k, t := range chunk {
			bit[t] = 1 << k
		}
		for _, i := range a.order {
			var m uint64
			for _, p := range a.g.needs[i] {
				m |= mask[p] | bit[p]
			}
			mask[i] = m
		}
		for _, t := range chunk {
			bit[t] = 0
		}
		for f := range want {
			for k, t := range chunk {
				if mask[f]&(1<<k) != 0 {
					known[[2]int{f, t}] = true
				}
			}
		}
	}
	return func(from, target int) bool { return known[[2]int{from, target}] }
}
