package store

import (
	"fmt"
	"time"
)

// Attempt is the accounting record of one attempt of a task: where and when
// it ran and what it used. The control loop writes it (Batch.Attempts) when
// an attempt ends, so the usage of shares and submitters over a period
// (allot usage) is read from durable history rather than from the
// scheduling state, which forgets ended jobs. The job's queue, share and
// submitter and the task's GPUs are copied in, so a usage report reads one
// table.
type Attempt struct {
	Job       string    `json:"job"`
	Task      string    `json:"task"`
	Attempt   int       `json:"attempt"`
	Worker    string    `json:"worker,omitempty"`
	Queue     string    `json:"queue"`
	Share     string    `json:"share,omitempty"`
	Submitter string    `json:"submitter,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	ExitCode  *int      `json:"exitCode,omitempty"`
	// GPUs is how many GPUs the task held while it ran.
	GPUs int `json:"gpus,omitempty"`
	// CPUSeconds and PeakMemory are what the worker measured (user plus
	// system CPU time, peak resident memory in bytes); zero when it
	// measured nothing.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	PeakMemory int64   `json:"peakMemory,omitempty"`
}

// AttemptFilter selects attempt records; zero fields match everything.
type AttemptFilter struct {
	// EndedAfter and StartedBefore select the attempts that overlap a
	// period: ended after its start, started before its end.
	EndedAfter, StartedBefore time.Time
	Job                       string
}

// CheckAttempt checks an attempt record: its job, task and attempt number,
// and representable times.
func CheckAttempt(a Attempt) error {
	if a.Job == "" {
		return fmt.Errorf("job: empty: %w", ErrInvalid)
	}
	if a.Task == "" {
		return fmt.Errorf("task: empty: %w", ErrInvalid)
	}
	if a.Attempt < 1 {
		return fmt.Errorf("attempt: %d, must be at least 1: %w", a.Attempt, ErrInvalid)
	}
	if err := CheckTime("started", a.Started); err != nil {
		return err
	}
	return CheckTime("ended", a.Ended)
}

// OutputChunk is a piece of an attempt's output (stdout and stderr
// together) as the worker streams it: Offset is how many bytes of the
// output came before Data. A chunk sent again (its answer was lost) is
// stored once: the bytes before the stored end are skipped. A gap (output
// the worker had to drop) counts as dropped.
type OutputChunk struct {
	Job     string
	Task    string
	Attempt int
	Offset  int64
	Data    []byte
}

// Output is what is kept of an attempt's output: Data holds the bytes from
// Start to Total, the end of everything the worker sent; the Start bytes
// before were dropped to keep the attempt within its limit (or never
// arrived).
type Output struct {
	Start int64
	Total int64
	Data  []byte
}

// Dropped is how many bytes of the output are not kept.
func (o Output) Dropped() int64 { return o.Total - int64(len(o.Data)) }

// MaxOutputEnd bounds where an attempt's output may end (a chunk's offset
// plus its length): 2^53 bytes, 8 PiB, more than any task writes, yet an
// offset every JSON reader holds exactly and far from the end of int64,
// so that offsets, totals and dropped counts never overflow.
const MaxOutputEnd int64 = 1 << 53

// CheckOutputChunk checks a chunk: its attempt, and its place in the
// output (CheckOutputRange).
func CheckOutputChunk(c OutputChunk) error {
	if c.Job == "" || c.Task == "" || c.Attempt < 1 {
		return fmt.Errorf("output of %s/%s attempt %d: job, task and attempt are required: %w", c.Job, c.Task, c.Attempt, ErrInvalid)
	}
	if msg := CheckOutputRange(c.Offset, len(c.Data)); msg != "" {
		return fmt.Errorf("output offset: %s: %w", msg, ErrInvalid)
	}
	return nil
}

// CheckOutputRange says what is wrong with a chunk of size bytes at
// offset ("" when nothing): a negative offset, or an end past
// MaxOutputEnd. The API checks a request's chunks with it before they
// reach the store, which checks them again.
func CheckOutputRange(offset int64, size int) string {
	switch {
	case offset < 0:
		return fmt.Sprintf("must not be negative (got %d)", offset)
	case size < 0 || int64(size) > MaxOutputEnd || offset > MaxOutputEnd-int64(size):
		return fmt.Sprintf("%d is too far: a chunk of %d bytes there would end past byte %d, the most an attempt's output may have", offset, size, MaxOutputEnd)
	}
	return ""
}

// OutputChunkRow is one stored chunk, as the backends keep them.
type OutputChunkRow struct {
	Offset int64
	Data   []byte
}

// AssembleOutput builds what is kept of an output from its stored chunks,
// in offset order, starting at byte from: the last limit bytes of the
// output (limit <= 0: all), or fewer when chunks were dropped. Backends
// keep whole chunks, so they may hold a little more than limit; this cuts
// it off.
func AssembleOutput(chunks []OutputChunkRow, limit int64, from int64) Output {
	var o Output
	if len(chunks) == 0 {
		return o
	}
	last := chunks[len(chunks)-1]
	o.Total = last.Offset + int64(len(last.Data))
	o.Start = chunks[0].Offset
	if limit > 0 && o.Total-o.Start > limit {
		o.Start = o.Total - limit
	}
	if from > o.Start {
		o.Start = min(from, o.Total)
	}
	for _, c := range chunks {
		end := c.Offset + int64(len(c.Data))
		if end <= o.Start {
			continue
		}
		d := c.Data
		if c.Offset < o.Start {
			d = d[o.Start-c.Offset:]
		} else if n := len(o.Data); c.Offset > o.Start+int64(n) {
			// A gap inside what is kept: what came before it is not
			// contiguous with what follows, so keep only what follows.
			o.Data, o.Start = nil, c.Offset
		}
		o.Data = append(o.Data, d...)
	}
	return o
}
