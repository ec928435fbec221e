package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// run executes the allot command line in-process and returns its output.
func run(t *testing.T, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err != nil {
		t.Fatalf("allot %v: %v", args, err)
	}
	return out.Bytes()
}

// TestPlanAndSimAreDeterministic: the same scenario and seed give
// byte-identical output, run after run.
func TestPlanAndSimAreDeterministic(t *testing.T) {
	examples := filepath.Join("..", "..", "examples")
	svg := filepath.Join(t.TempDir(), "a.svg")
	svg2 := filepath.Join(t.TempDir(), "b.svg")
	for _, args := range [][]string{
		{"plan", "-f", filepath.Join(examples, "classload-loan.yaml"), "-o", "json"},
		{"plan", "-f", filepath.Join(examples, "fifo.yaml")},
		{"sim", "-f", filepath.Join(examples, "fairshare-reservation.yaml"), "-o", "json"},
		{"sim", "-f", filepath.Join(examples, "priority-aggregation.yaml")},
	} {
		first, second := run(t, args...), run(t, args...)
		if len(first) == 0 || !bytes.Equal(first, second) {
			t.Errorf("allot %v: two runs differ (or are empty)", args)
		}
	}
	run(t, "sim", "-f", filepath.Join(examples, "fairshare-weights.yaml"), "--plot", svg)
	run(t, "sim", "-f", filepath.Join(examples, "fairshare-weights.yaml"), "--plot", svg2)
	a, b := readFile(t, svg), readFile(t, svg2)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("two plots of one scenario differ")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
