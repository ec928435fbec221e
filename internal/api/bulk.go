package api

// MaxBulkJobs bounds the job documents of one bulk submission
// (POST /v1/jobs/bulk): a script with more sends several calls. The
// request's body limit applies as well.
const MaxBulkJobs = 10000

// The status of one job of a bulk submission.
const (
	// BulkCreated: the job is stored and scheduled.
	BulkCreated = "created"
	// BulkDeadLettered: the job is stored on the dead-letter list (its
	// inputs could not be read); it takes no capacity until redriven.
	BulkDeadLettered = "dead_lettered"
	// BulkRefused: nothing of the job was stored; Error says why, as the
	// single-job route would have answered it.
	BulkRefused = "refused"
)

// BulkResults is the answer of POST /v1/jobs/bulk: one result per job
// document of the body, in the order of the body.
type BulkResults struct {
	Results []BulkResult `json:"results"`
}

// BulkResult is the answer for one job document of a bulk submission.
type BulkResult struct {
	// Index is the document's position in the body, from 0.
	Index int `json:"index"`
	// ID is the job's ID: the stored job's, or the one the document asked
	// for when it was refused (empty if it named none).
	ID     string `json:"id,omitempty"`
	Status string `json:"status"`
	// Error is why the job was refused: the error POST /v1/jobs would
	// have answered for it alone (its line counted in the whole body).
	Error *Error `json:"error,omitempty"`
	// Warnings are those of a created job, as POST /v1/jobs answers them
	// (Job.Warnings).
	Warnings []Warning `json:"warnings,omitempty"`
}
