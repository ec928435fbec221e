package spec

import (
	"strings"
	"testing"
	"time"
)

func TestACountOutOfItsRangeNamesTheRangeThatIsAccepted(t *testing.T) {
	cases := []struct{ count, want string }{
		{"2.7", "tasks[0].count: must be a whole number between 1 and 100000 (got 2.7)"},
		{"1e30", "tasks[0].count: must be a whole number between 1 and 100000 (got 1e30)"},
		{"0", "tasks[0].count: must be at least 1 (got 0)"},
	}
	for _, tc := range cases {
		var js Job
		_, err := Decode([]byte("tasks:\n  - {name: a, run: x, count: "+tc.count+"}\n"), &js)
		if err == nil {
			if _, err = js.Expand("", time.Time{}); err == nil {
				t.Errorf("count: %s: accepted", tc.count)
				continue
			}
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("count: %s: %v, want %q", tc.count, err, tc.want)
		}
	}
}
