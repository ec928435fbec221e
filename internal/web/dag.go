package web

import (
	"fmt"
	"sort"

	"github.com/allot-sched/allot/internal/api"
)

// maxDAGTasks bounds the tasks drawn as a graph: past it the drawing would
// be too large to read (and to send), and the task table says it all.
const maxDAGTasks = 400

// dagView is a job's tasks laid out as boxes in columns by dependency depth
// (a task's column is one more than its deepest need's), with an edge from
// each need to the task that needs it.
type dagView struct {
	Width, Height int
	Boxes         []dagBox
	Edges         []dagEdge
	TooMany       int // the task count, when it is too large to draw
}

type dagBox struct {
	X, Y, W, H int
	Name       string // as shown, shortened when long
	Full       string // the whole name, in the tooltip
	State      string
	Link       string // the task's row in the table
}

type dagEdge struct {
	Path  string // an SVG path: a cubic curve from the need to the task
	State string // the need's state, so finished dependencies fade
}

const (
	boxW, boxH   = 150, 34
	colGap       = 60
	rowGap       = 14
	dagMargin    = 10
	maxLabelRune = 19
)

// layoutDAG computes the drawing of tasks. Needs that name no task of the
// list (never the case for a valid job) are ignored rather than drawn.
func layoutDAG(tasks []api.Task) *dagView {
	if len(tasks) > maxDAGTasks {
		return &dagView{TooMany: len(tasks)}
	}
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
	}
	depth := make([]int, len(tasks))
	done := make([]bool, len(tasks))
	var visit func(i int, onPath map[int]bool) int
	visit = func(i int, onPath map[int]bool) int {
		if done[i] {
			return depth[i]
		}
		onPath[i] = true
		d := 0
		for _, n := range tasks[i].Needs {
			j, ok := index[n]
			if !ok || onPath[j] { // a cycle cannot pass validation; never loop on one
				continue
			}
			d = max(d, visit(j, onPath)+1)
		}
		delete(onPath, i)
		depth[i], done[i] = d, true
		return d
	}
	cols := map[int][]int{}
	maxDepth := 0
	for i := range tasks {
		d := visit(i, map[int]bool{})
		cols[d] = append(cols[d], i)
		maxDepth = max(maxDepth, d)
	}
	v := &dagView{}
	pos := make([][2]int, len(tasks))
	tallest := 0
	for d := 0; d <= maxDepth; d++ {
		col := cols[d]
		// The job's order within a column, which for expanded tasks
		// (train-0, train-1, …) is their index order.
		sort.SliceStable(col, func(a, b int) bool { return col[a] < col[b] })
		tallest = max(tallest, len(col))
	}
	for d := 0; d <= maxDepth; d++ {
		col := cols[d]
		// Centre shorter columns against the tallest one.
		offset := (tallest - len(col)) * (boxH + rowGap) / 2
		for r, i := range col {
			x := dagMargin + d*(boxW+colGap)
			y := dagMargin + offset + r*(boxH+rowGap)
			pos[i] = [2]int{x, y}
			t := tasks[i]
			v.Boxes = append(v.Boxes, dagBox{X: x, Y: y, W: boxW, H: boxH, Name: shorten(t.Name, maxLabelRune), Full: t.Name,
				State: t.State, Link: "#task-" + t.Name})
		}
	}
	for i, t := range tasks {
		for _, n := range t.Needs {
			j, ok := index[n]
			if !ok {
				continue
			}
			x1, y1 := pos[j][0]+boxW, pos[j][1]+boxH/2
			x2, y2 := pos[i][0], pos[i][1]+boxH/2
			mid := (x1 + x2) / 2
			v.Edges = append(v.Edges, dagEdge{Path: fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, mid, y1, mid, y2, x2-4, y2), State: tasks[j].State})
		}
	}
	v.Width = 2*dagMargin + (maxDepth+1)*boxW + maxDepth*colGap
	v.Height = 2*dagMargin + max(tallest, 1)*(boxH+rowGap) - rowGap
	return v
}

// shorten cuts s to n runes with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
