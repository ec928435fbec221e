package main

import (
	"io"
	"reflect"
	"testing"
)

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want map[string]string
		bad  bool
	}{
		{name: "none", in: nil, want: nil},
		{name: "pairs, with '=' in a value", in: []string{"zone=eu-1", "expr=a=b"}, want: map[string]string{"zone": "eu-1", "expr": "a=b"}},
		{name: "an empty value", in: []string{"gpu="}, want: map[string]string{"gpu": ""}},
		{name: "the same pair twice", in: []string{"a=1", "a=1"}, want: map[string]string{"a": "1"}},
		{name: "no '='", in: []string{"zone"}, bad: true},
		{name: "no key", in: []string{"=x"}, bad: true},
		{name: "one key, two values", in: []string{"a=1", "a=2"}, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLabels(tt.in)
			if (err != nil) != tt.bad || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseLabels(%q) = %v, %v; want %v, bad=%v", tt.in, got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestWorkerCommandHasItsFlagsAndChecksQuantities(t *testing.T) {
	cmd := newWorkerCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	for _, f := range []string{"server", "token", "name", "cpu", "memory", "gpus", "gpu-memory", "slots", "label",
		"cost-per-hour", "cached", "workdir", "grace", "output-tail", "heartbeat"} {
		if cmd.Flags().Lookup(f) == nil {
			t.Errorf("no --%s flag", f)
		}
	}
	cmd.SetArgs([]string{"--server", "http://127.0.0.1:1", "--cpu", "two"})
	if err := cmd.Execute(); err == nil || err.Error() != `--cpu: "two" is not a CPU quantity (like 2, 0.5 or 500m)` {
		t.Errorf("bad --cpu: %v", err)
	}
}
