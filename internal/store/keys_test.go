package store_test

import (
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

// The keys are stored data: a server must find what an older one wrote, so
// their spelling never changes.
func TestKeysKeepTheirStoredSpelling(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{store.ThrottlingKey, "admission/throttling"},
		{store.EndpointsKey, "admission/endpoints"},
		{store.QueuePolicyKey("gpu"), "queue/gpu/policy"},
		{store.QueueHistoryKey("gpu"), "queue/gpu/history"},
		{store.WorkerDisabledByKey("w1"), "worker/w1/disabledBy"},
		{store.JobDeadLetterKey("j1"), "job/j1/deadletter"},
		{store.JobVariantKey("j1"), "job/j1/variant"},
		{store.JobThrottledKey("j1"), "job/j1/throttled"},
		{store.QuarantineKey(store.QueuePolicyKey("gpu")), "quarantine/queue/gpu/policy"},
		{store.QuarantineEntryKey(store.EndpointsKey, "det"), "quarantine/admission/endpoints/det"},
		{store.QuarantineWorkerKey("w1"), "quarantine/worker/w1"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
}
