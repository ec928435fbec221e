package auth

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

var (
	admin     = Principal{TokenID: "tok-a", Role: Admin}
	research  = Principal{TokenID: "tok-r", Role: Submitter, Queues: []string{"batch"}, Shares: []string{"research"}}
	anyShare  = Principal{TokenID: "tok-s", Role: Submitter, Queues: []string{"batch", "gpu"}, Shares: []string{Any}}
	anyQueue  = Principal{TokenID: "tok-q", Role: Submitter, Queues: []string{Any}, Shares: []string{"ops", "research"}}
	gpuWorker = Principal{TokenID: "tok-w", Role: Worker, Workers: []string{"gpu-*", "cpu-1"}}
	noRole    = Principal{}
)

func TestEachRoleMayDoExactlyItsActions(t *testing.T) {
	actions := []Action{ReadJobs, SubmitJobs, CancelJobs, ReadEvents, ReadWorkers, ReadQueues, WorkerProtocol,
		ChangeWorkers, ChangePolicies, ManageTokens}
	may := map[Role][]Action{
		Admin:     actions,
		Submitter: {ReadJobs, SubmitJobs, CancelJobs, ReadEvents, ReadWorkers, ReadQueues},
		Worker:    {WorkerProtocol},
		"":        nil,
		"root":    nil,
	}
	for role, yes := range may {
		for _, a := range actions {
			t.Run(fmt.Sprintf("%s/%s", role, a), func(t *testing.T) {
				err := Principal{Role: role}.Allow(a)
				if want := slices.Contains(yes, a); (err == nil) != want {
					t.Fatalf("Allow = %v, want allowed %v", err, want)
				}
				if err != nil && (!errors.Is(err, ErrForbidden) || err.Error() == "") {
					t.Errorf("refusal %v is not a Denied with a message", err)
				}
			})
		}
	}
}

func TestSubmitIsLimitedToTheTokensQueuesAndShares(t *testing.T) {
	cases := []struct {
		name         string
		p            Principal
		queue, share string
		field        string // "" = allowed
		message      string
	}{
		{"admin anywhere", admin, "gpu", "ops", "", ""},
		{"admin without share", admin, "gpu", "", "", ""},
		{"own queue and share", research, "batch", "research", "", ""},
		{"other share", research, "batch", "ops", "share", `share "ops" is not allowed for this token (allowed: research)`},
		{"other queue", research, "gpu", "research", "queue", `queue "gpu" is not allowed for this token (allowed: batch)`},
		{"queue checked before share", research, "gpu", "ops", "queue", ""},
		{"no share with a share list", research, "batch", "", "share", "a share is required by this token (allowed: research)"},
		{"any share", anyShare, "gpu", "whatever", "", ""},
		{"any share allows none", anyShare, "gpu", "", "", ""},
		{"any share, other queue", anyShare, "cpu", "x", "queue", ""},
		{"any queue", anyQueue, "whatever", "ops", "", ""},
		{"any queue, other share", anyQueue, "whatever", "dev", "share", ""},
		{"worker may not submit", gpuWorker, "batch", "research", "-", "a worker token may not submit jobs"},
		{"no role may not submit", noRole, "batch", "", "-", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.AllowSubmit(tc.queue, tc.share)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("AllowSubmit(%q, %q) = %v, want allowed", tc.queue, tc.share, err)
				}
				return
			}
			var d *Denied
			if !errors.As(err, &d) {
				t.Fatalf("AllowSubmit(%q, %q) = %v, want *Denied", tc.queue, tc.share, err)
			}
			if want := tc.field; want != "-" && d.Field != want {
				t.Errorf("field %q, want %q", d.Field, want)
			}
			if tc.message != "" && d.Message != tc.message {
				t.Errorf("message %q, want %q", d.Message, tc.message)
			}
		})
	}
}

func TestListFilterOutsideTheScopeIsRefused(t *testing.T) {
	cases := []struct {
		p            Principal
		queue, share string
		field        string
	}{
		{research, "", "", ""},
		{research, "batch", "", ""},
		{research, "", "research", ""},
		{research, "gpu", "", "queue"},
		{research, "", "ops", "share"},
		{anyQueue, "anything", "ops", ""},
		{admin, "x", "y", ""},
		{gpuWorker, "", "", "-"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.p.TokenID, tc.queue, tc.share), func(t *testing.T) {
			err := tc.p.AllowFilter(tc.queue, tc.share)
			var d *Denied
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("AllowFilter = %v, want allowed", err)
			case tc.field != "" && !errors.As(err, &d):
				t.Fatalf("AllowFilter = %v, want *Denied", err)
			case tc.field != "" && tc.field != "-" && d.Field != tc.field:
				t.Fatalf("field %q, want %q", d.Field, tc.field)
			}
		})
	}
}

func TestSubmittersSeeOnlyJobsInTheirQueuesAndShares(t *testing.T) {
	cases := []struct {
		p            Principal
		queue, share string
		want         bool
	}{
		{admin, "any", "", true},
		{research, "batch", "research", true},
		{research, "batch", "ops", false},
		{research, "gpu", "research", false},
		{research, "batch", "", false},
		{anyShare, "gpu", "", true},
		{anyShare, "cpu", "ops", false},
		{anyQueue, "cpu", "ops", true},
		{gpuWorker, "batch", "research", false},
		{noRole, "batch", "research", false},
	}
	for _, tc := range cases {
		if got := tc.p.Sees(tc.queue, tc.share); got != tc.want {
			t.Errorf("%s Sees(%q, %q) = %v, want %v", tc.p.TokenID, tc.queue, tc.share, got, tc.want)
		}
	}
}

func TestJobScopeIsNilForAny(t *testing.T) {
	cases := []struct {
		p              Principal
		queues, shares []string
	}{
		{admin, nil, nil},
		{research, []string{"batch"}, []string{"research"}},
		{anyShare, []string{"batch", "gpu"}, nil},
		{anyQueue, nil, []string{"ops", "research"}},
	}
	for _, tc := range cases {
		q, s := tc.p.JobScope()
		if !slices.Equal(q, tc.queues) || !slices.Equal(s, tc.shares) || (q == nil) != (tc.queues == nil) || (s == nil) != (tc.shares == nil) {
			t.Errorf("%s JobScope = %q, %q; want %q, %q", tc.p.TokenID, q, s, tc.queues, tc.shares)
		}
	}
}

func TestWorkerTokensActOnlyForTheirNames(t *testing.T) {
	cases := []struct {
		p    Principal
		name string
		want string // "" allowed, else the refusal's field ("-": none)
	}{
		{gpuWorker, "gpu-1", ""},
		{gpuWorker, "gpu-", ""},
		{gpuWorker, "cpu-1", ""},
		{gpuWorker, "cpu-10", "name"},
		{gpuWorker, "gpu", "name"},
		{gpuWorker, "xgpu-1", "name"},
		{Principal{Role: Worker, Workers: []string{"*"}}, "anything", ""},
		{Principal{Role: Worker}, "w", "name"},
		{admin, "anything", ""},
		{research, "gpu-1", "-"},
		{noRole, "gpu-1", "-"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", tc.p.TokenID, tc.name), func(t *testing.T) {
			err := tc.p.ActAs(tc.name)
			var d *Denied
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ActAs = %v, want allowed", err)
			case tc.want != "" && !errors.As(err, &d):
				t.Fatalf("ActAs = %v, want *Denied", err)
			case tc.want != "" && tc.want != "-" && d.Field != tc.want:
				t.Fatalf("field %q, want %q", d.Field, tc.want)
			}
		})
	}
	err := gpuWorker.ActAs("cpu-2")
	if want := `worker "cpu-2" is not allowed for this token (allowed: gpu-*, cpu-1)`; err == nil || err.Error() != want {
		t.Errorf("message %v, want %q", err, want)
	}
}
