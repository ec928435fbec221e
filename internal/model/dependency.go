package model

// DependencyType says what a job waits for in another job, as Slurm's
// --dependency types do.
type DependencyType string

// Dependency types. A job that waits for another job starts nothing until
// the dependency is met; one that can never be met (afterok on a job that
// failed) ends the waiting job as failed, naming the other job.
const (
	// After is met once the other job started (a task of it ran), or ended.
	After DependencyType = "after"
	// AfterOK is met when the other job succeeded; never if it failed or
	// was cancelled.
	AfterOK DependencyType = "afterok"
	// AfterNotOK is met when the other job failed or was cancelled; never
	// if it succeeded.
	AfterNotOK DependencyType = "afternotok"
	// AfterAny is met when the other job ended, however it ended.
	AfterAny DependencyType = "afterany"
)

// DependencyTypes lists the dependency types, for messages and docs.
var DependencyTypes = []DependencyType{After, AfterOK, AfterNotOK, AfterAny}

// Known reports whether t is one of DependencyTypes.
func (t DependencyType) Known() bool {
	for _, k := range DependencyTypes {
		if t == k {
			return true
		}
	}
	return false
}

// JobDependency is a job's dependency on another job: the job's tasks wait
// until Job meets Type. An empty Type is AfterOK.
type JobDependency struct {
	Job  string         `yaml:"job" json:"job"`
	Type DependencyType `yaml:"type,omitempty" json:"type,omitempty"`
}

// Met reports whether a dependency of type t on a job is met given what
// that job did (started: a task of it ran; ended: its end state, or "" if
// it has not ended), and whether it can still be met at all.
func (t DependencyType) Met(started bool, ended TaskState) (met, possible bool) {
	switch t {
	case After:
		return started || ended != "", true
	case AfterAny:
		return ended != "", true
	case AfterNotOK:
		switch ended {
		case "":
			return false, true
		case TaskSucceeded:
			return false, false
		}
		return true, true
	default: // AfterOK
		switch ended {
		case "":
			return false, true
		case TaskSucceeded:
			return true, true
		}
		return false, false
	}
}

// Wants says in words what a dependency of type t waits for, completing
// "waits for job X to ...".
func (t DependencyType) Wants() string {
	switch t {
	case After:
		return "start"
	case AfterAny:
		return "end"
	case AfterNotOK:
		return "fail or be cancelled"
	}
	return "succeed"
}
