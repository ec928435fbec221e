package store

// The keys of the key-value table (Batch.KV, Store.KV), all of them: what
// the server keeps beside jobs, tasks, workers and events. Every key is
// built here, so that the layout of the table is in one file, a backend
// or a migration can see every key there is, and two features cannot
// pick the same key. A key is a path of "/"-separated parts; a name in it
// (a queue, job or worker) is one part (model.ValidName allows no "/").

// Admission settings changed at run time (PUT /v1/throttling and
// /v1/endpoints), stored whole: they replace the configured ones.
const (
	ThrottlingKey = "admission/throttling"
	EndpointsKey  = "admission/endpoints"
)

// QueuePolicyKey holds the policy block a queue was given at run time
// (PUT /v1/queues/{name}/policy).
func QueuePolicyKey(queue string) string { return "queue/" + queue + "/policy" }

// QueueHistoryKey holds a queue's policy history (usage, rebalance clock),
// so that a restart goes on where it left off.
func QueueHistoryKey(queue string) string { return "queue/" + queue + "/history" }

// WorkerDisabledByKey holds who disabled a worker (an admin, or the
// elastic coordinator); absent for an enabled worker.
func WorkerDisabledByKey(worker string) string { return "worker/" + worker + "/disabledBy" }

// JobDeadLetterKey holds why a job was dead-lettered, until it is
// redriven.
func JobDeadLetterKey(job string) string { return "job/" + job + "/deadletter" }

// JobVariantKey holds the endpoint variant chosen for a job, so that a
// restart keeps the choice.
func JobVariantKey(job string) string { return "job/" + job + "/variant" }

// HeldJobsKey holds the held jobs (allot hold), as a JSON object from job
// ID to who holds it: one key, read once at a start, since few jobs are
// held at a time.
const HeldJobsKey = "jobs/held"

// JobThrottledKey holds when a job waiting for admission was first
// throttled, so that its starvation wait survives a restart.
func JobThrottledKey(job string) string { return "job/" + job + "/throttled" }

// QuarantinePrefix prefixes the keys that rows recovery could not read
// back are moved to, for an operator to look at.
const QuarantinePrefix = "quarantine/"

// QuarantineKey is where a stored setting (a key above) that could not be
// read back is set aside.
func QuarantineKey(key string) string { return QuarantinePrefix + key }

// QuarantineEntryKey is where one entry (name) of a stored setting is set
// aside when the others still apply.
func QuarantineEntryKey(key, name string) string { return QuarantinePrefix + key + "/" + name }

// QuarantineWorkerKey is where the registration of a worker that could
// not be read back is set aside.
func QuarantineWorkerKey(worker string) string { return QuarantinePrefix + "worker/" + worker }
