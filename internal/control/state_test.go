package control

import (
	"encoding/json"
	"testing"
)

func TestAttemptDataIsTheJSONOfTheAttempt(t *testing.T) {
	for _, n := range []int{0, 1, 42, 1 << 40, -3} {
		want, _ := json.Marshal(map[string]int{"attempt": n})
		if got := attemptData(n); string(got) != string(want) {
			t.Errorf("attemptData(%d) = %s, want %s", n, got, want)
		}
	}
}
