package spec

import (
	"strings"
	"testing"
)

func TestLiveTaskLimitsAreCheckedNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    LimitSettings
		want string // a field the error names; "" for none
	}{
		{"unset takes the defaults", LimitSettings{}, ""},
		{"both set", LimitSettings{MaxLiveTasks: 10, MaxLiveTasksPerSubmitter: 10}, ""},
		{"per submitter alone", LimitSettings{MaxLiveTasksPerSubmitter: 7}, ""},
		{"negative server bound", LimitSettings{MaxLiveTasks: -1}, "server.limits.maxLiveTasks"},
		{"negative submitter bound", LimitSettings{MaxLiveTasksPerSubmitter: -1}, "server.limits.maxLiveTasksPerSubmitter"},
		{"submitter bound above the server's", LimitSettings{MaxLiveTasks: 10, MaxLiveTasksPerSubmitter: 11}, "server.limits.maxLiveTasksPerSubmitter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want+":")):
				t.Fatalf("Check: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
