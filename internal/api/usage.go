package api

import "time"

// The bodies of the output, accounting and usage routes.

// OutputChunks is the body of POST /v1/workers/{name}/output: pieces of the
// output of attempts still running (or just ended), as the worker reads
// them, so that allot logs -f follows a task live.
type OutputChunks struct {
	Chunks []OutputChunk `json:"chunks"`
}

// OutputChunk is a piece of an attempt's output: Offset is how many bytes
// of that output came before Data. Data is bytes (base64 in JSON): output
// need not be UTF-8, and a chunk may end inside a character. Secret is
// the attempt's secret (Assignment.Secret), without which the chunk is
// refused.
type OutputChunk struct {
	Attempt
	Secret string `json:"secret,omitempty"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// AttemptUsage is one ended attempt of a task as the accounting records
// it: where and how long it ran and what it used. CPUSeconds (user plus
// system) and PeakMemory (bytes, the peak resident set) are what the
// worker measured; zero when it measured nothing.
type AttemptUsage struct {
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker,omitempty"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	ExitCode   *int      `json:"exitCode,omitempty"`
	CPUSeconds float64   `json:"cpuSeconds,omitempty"`
	PeakMemory int64     `json:"peakMemory,omitempty"`
	// WallSeconds is Ended minus Started.
	WallSeconds float64 `json:"wallSeconds"`
}

// Usage is the answer of GET /v1/usage: what the attempts that ran in
// [Since, Until) used, per share and per submitter. An attempt counts for
// the part of its run inside the period: slot-hours are its wall time
// there, GPU-hours that times its GPUs, CPU-hours its CPU time in the same
// proportion. Attempts still running are not counted until they end.
type Usage struct {
	Since      time.Time  `json:"since"`
	Until      time.Time  `json:"until"`
	Shares     []UsageRow `json:"shares"`
	Submitters []UsageRow `json:"submitters"`
	Total      UsageRow   `json:"total"`
}

// UsageRow is the usage of one share or submitter ("" for jobs without).
type UsageRow struct {
	Name      string  `json:"name"`
	Attempts  int     `json:"attempts"`
	SlotHours float64 `json:"slotHours"`
	CPUHours  float64 `json:"cpuHours"`
	GPUHours  float64 `json:"gpuHours"`
}
