// Package trace reads workload traces into jobs for the simulator: the
// Standard Workload Format (SWF) of the Parallel Workloads Archive, and the
// Azure LLM inference CSV. It only loads; internal/sim replays the jobs and
// renders the report.
package trace

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// SWF field numbers (1-based, as the format's documentation counts them).
const (
	swfJobNumber  = 1
	swfSubmit     = 2
	swfRunTime    = 4
	swfAllocProcs = 5
	swfReqProcs   = 8
	swfUser       = 12
	swfGroup      = 13
	swfExecutable = 14
	swfQueue      = 15
	swfPartition  = 16
	swfFields     = 18
)

// swfAttr maps the names SWFOptions accepts to a field and the prefix its
// values get ("u12" for user 12), so that ids of different kinds never
// collide in a group key.
var swfAttr = map[string]struct {
	field  int
	prefix string
}{
	"user":       {swfUser, "u"},
	"group":      {swfGroup, "g"},
	"executable": {swfExecutable, "e"},
	"queue":      {swfQueue, "q"},
	"partition":  {swfPartition, "p"},
}

// SWFOptions say how SWF records become jobs.
type SWFOptions struct {
	// ShareField, ClassField and QueueField name the SWF field that fills
	// model.Job.Share, Requestor and Queue: "user" (field 12), "group" (13),
	// "executable" (14), "queue" (15), "partition" (16) or "none". Values
	// are prefixed by kind: u12, g1, e3, q0, p2; an unknown value (-1)
	// becomes u? (and, for the queue, Queue). Defaults: ShareField "user",
	// ClassField "none", QueueField "none".
	ShareField string
	ClassField string
	QueueField string
	// Queue is the queue of every job when QueueField is "none", and of the
	// jobs whose queue field is unknown. Default "default".
	Queue string
	// Limit keeps the first Limit jobs (after skipping); 0 keeps all.
	Limit int
	// Start is time zero: job submit times are offsets from it. Zero uses
	// the header's UnixStartTime, or the Unix epoch without one.
	Start time.Time
	// Resources is what each task asks for; zero fits any worker, so each
	// task simply takes one slot.
	Resources model.Resources
}

// SWFInfo is what the header said and what loading did.
type SWFInfo struct {
	Version        string   `json:"version,omitempty"`
	Computer       string   `json:"computer,omitempty"`
	Installation   string   `json:"installation,omitempty"`
	MaxJobs        int      `json:"maxJobs,omitempty"`
	MaxRecords     int      `json:"maxRecords,omitempty"`
	MaxNodes       int      `json:"maxNodes,omitempty"`
	MaxProcs       int      `json:"maxProcs,omitempty"`
	UnixStartTime  int64    `json:"unixStartTime,omitempty"`
	TimeZoneString string   `json:"timeZoneString,omitempty"`
	StartTime      string   `json:"startTime,omitempty"`
	EndTime        string   `json:"endTime,omitempty"`
	MaxQueues      int      `json:"maxQueues,omitempty"`
	MaxPartitions  int      `json:"maxPartitions,omitempty"`
	Queues         []string `json:"queues,omitempty"`     // "Queue:" lines, e.g. "0 interactive"
	Partitions     []string `json:"partitions,omitempty"` // "Partition:" lines
	Notes          []string `json:"notes,omitempty"`      // "Note:" lines, continuations joined
	// Other holds header keys not listed above, by key.
	Other map[string]string `json:"other,omitempty"`

	// Start is the time zero the jobs were placed after.
	Start time.Time `json:"start"`
	// Records counts job lines read; Jobs and Tasks what they became;
	// Skipped the records with a negative run time or no processor count.
	Records int `json:"records"`
	Jobs    int `json:"jobs"`
	Tasks   int `json:"tasks"`
	Skipped int `json:"skipped"`
}

// LoadSWFFile loads an SWF trace file, compressed with gzip or not.
func LoadSWFFile(path string, opt SWFOptions) ([]model.Job, SWFInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, SWFInfo{}, err
	}
	defer f.Close()
	jobs, info, err := LoadSWF(f, opt)
	if err != nil {
		return nil, info, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, info, nil
}

// LoadSWF reads a trace in the Standard Workload Format. Gzip input is
// recognised by its magic bytes. Each record becomes one job of n one-slot
// tasks, n being the allocated processors (field 5) or, when unknown, the
// requested ones (field 8); each task runs for the record's run time (field
// 4), and the job arrives at the submit time (field 2) after Start. Records
// with a negative run time or no processor count are skipped and counted.
func LoadSWF(r io.Reader, opt SWFOptions) ([]model.Job, SWFInfo, error) {
	var info SWFInfo
	share, err := swfMapper("shareField", opt.ShareField, "user")
	if err != nil {
		return nil, info, err
	}
	class, err := swfMapper("classField", opt.ClassField, "none")
	if err != nil {
		return nil, info, err
	}
	queueOf, err := swfMapper("queueField", opt.QueueField, "none")
	if err != nil {
		return nil, info, err
	}
	if opt.Queue == "" {
		opt.Queue = "default"
	}
	if opt.Limit < 0 {
		return nil, info, fmt.Errorf("limit: must not be negative (got %d)", opt.Limit)
	}
	in, err := maybeGzip(r)
	if err != nil {
		return nil, info, err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var (
		jobs     []model.Job
		names    []string // task names p0, p1, … shared by all jobs
		ids      = map[string]int{}
		lastKey  string
		startSet bool
		line     int
	)
	start := func() time.Time {
		if !startSet {
			info.Start = opt.Start
			if info.Start.IsZero() {
				info.Start = time.Unix(info.UnixStartTime, 0).UTC()
			}
			startSet = true
		}
		return info.Start
	}
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if trimmed == "" {
			continue
		}
		if trimmed[0] == ';' {
			lastKey = info.header(strings.TrimPrefix(trimmed, ";"), lastKey)
			continue
		}
		if opt.Limit > 0 && len(jobs) >= opt.Limit {
			break
		}
		f := strings.Fields(trimmed)
		if len(f) < swfFields {
			return nil, info, fmt.Errorf("line %d: %d fields, an SWF record has %d", line, len(f), swfFields)
		}
		info.Records++
		num := func(field int) (float64, error) {
			v, err := strconv.ParseFloat(f[field-1], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("line %d field %d: %q is not a number", line, field, f[field-1])
			}
			return v, nil
		}
		var vals [swfFields + 1]float64
		for _, k := range []int{swfJobNumber, swfSubmit, swfRunTime, swfAllocProcs, swfReqProcs, swfUser, swfGroup, swfExecutable, swfQueue, swfPartition} {
			if vals[k], err = num(k); err != nil {
				return nil, info, err
			}
		}
		procs := int(vals[swfAllocProcs])
		if procs <= 0 {
			procs = int(vals[swfReqProcs])
		}
		if vals[swfRunTime] < 0 || procs <= 0 {
			info.Skipped++
			continue
		}
		id := strconv.FormatInt(int64(vals[swfJobNumber]), 10)
		if n := ids[id]; n > 0 {
			ids[id] = n + 1
			id = fmt.Sprintf("%s.%d", id, n+1)
		} else {
			ids[id] = 1
		}
		for len(names) < procs {
			names = append(names, "p"+strconv.Itoa(len(names)))
		}
		run := time.Duration(math.Round(vals[swfRunTime] * 1e9))
		tasks := make([]model.Task, procs)
		for k := range tasks {
			tasks[k] = model.Task{Name: names[k], Duration: run, Resources: opt.Resources}
		}
		q := queueOf(&vals)
		if q == "" || strings.HasSuffix(q, "?") {
			q = opt.Queue
		}
		jobs = append(jobs, model.Job{ID: id, Queue: q, Share: share(&vals), Requestor: class(&vals),
			Submitted: start().Add(time.Duration(math.Round(vals[swfSubmit] * 1e9))), Tasks: tasks})
		info.Tasks += procs
	}
	if err := sc.Err(); err != nil {
		return nil, info, fmt.Errorf("line %d: %w", line+1, err)
	}
	start()
	info.Jobs = len(jobs)
	return jobs, info, nil
}

// maybeGzip returns r, decompressed when it starts with the gzip magic.
func maybeGzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	}
	return br, nil
}

// swfMapper returns the function that renders the chosen field of a record.
func swfMapper(option, name, def string) (func(*[swfFields + 1]float64) string, error) {
	if name == "" {
		name = def
	}
	if name == "none" {
		return func(*[swfFields + 1]float64) string { return "" }, nil
	}
	a, ok := swfAttr[name]
	if !ok {
		return nil, fmt.Errorf("%s: unknown field %q (known: user, group, executable, queue, partition, none)", option, name)
	}
	return func(v *[swfFields + 1]float64) string {
		x := v[a.field]
		if x < 0 {
			return a.prefix + "?"
		}
		return a.prefix + strconv.FormatInt(int64(x), 10)
	}, nil
}

// header reads one comment line ("; Key: value"). A line indented by two or
// more spaces continues the previous key. It returns the key now current.
func (info *SWFInfo) header(content, lastKey string) string {
	indent := len(content) - len(strings.TrimLeft(content, " \t"))
	body := strings.TrimSpace(content)
	if body == "" {
		return ""
	}
	key, value, ok := strings.Cut(body, ":")
	if indent >= 2 || !ok || strings.ContainsAny(key, " \t") {
		if lastKey != "" {
			info.appendTo(lastKey, body)
		}
		return lastKey
	}
	value = strings.TrimSpace(value)
	atoi := func() int { n, _ := strconv.Atoi(value); return n }
	switch key {
	case "Version":
		info.Version = value
	case "Computer":
		info.Computer = value
	case "Installation":
		info.Installation = value
	case "MaxJobs":
		info.MaxJobs = atoi()
	case "MaxRecords":
		info.MaxRecords = atoi()
	case "MaxNodes":
		info.MaxNodes = atoi()
	case "MaxProcs":
		info.MaxProcs = atoi()
	case "UnixStartTime":
		info.UnixStartTime, _ = strconv.ParseInt(value, 10, 64)
	case "TimeZoneString":
		info.TimeZoneString = value
	case "StartTime":
		info.StartTime = value
	case "EndTime":
		info.EndTime = value
	case "MaxQueues":
		info.MaxQueues = atoi()
	case "MaxPartitions":
		info.MaxPartitions = atoi()
	case "Queue":
		info.Queues = append(info.Queues, strings.Join(strings.Fields(value), " "))
	case "Partition":
		info.Partitions = append(info.Partitions, strings.Join(strings.Fields(value), " "))
	case "Note":
		info.Notes = append(info.Notes, value)
	default:
		if info.Other == nil {
			info.Other = map[string]string{}
		}
		if _, seen := info.Other[key]; !seen {
			info.Other[key] = value
		} else {
			info.Other[key] += "; " + value
		}
	}
	return key
}

// appendTo adds a continuation line to the value of key.
func (info *SWFInfo) appendTo(key, more string) {
	join := func(s string) string {
		if s == "" {
			return more
		}
		return s + " " + more
	}
	switch key {
	case "Note":
		if n := len(info.Notes); n > 0 {
			info.Notes[n-1] = join(info.Notes[n-1])
		}
	case "Installation":
		info.Installation = join(info.Installation)
	case "Computer":
		info.Computer = join(info.Computer)
	default:
		if info.Other != nil {
			if _, ok := info.Other[key]; ok {
				info.Other[key] = join(info.Other[key])
			}
		}
	}
}
