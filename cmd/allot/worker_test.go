package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
		"cost-per-hour", "cached", "workdir", "grace", "output-tail", "heartbeat", "token-file", "run-as", "allow-user", "state-dir"} {
		if cmd.Flags().Lookup(f) == nil {
			t.Errorf("no --%s flag", f)
		}
	}
	cmd.SetArgs([]string{"--server", "http://127.0.0.1:1", "--cpu", "two"})
	if err := cmd.Execute(); err == nil || err.Error() != `--cpu: "two" is not a CPU quantity (like 2, 0.5 or 500m)` {
		t.Errorf("bad --cpu: %v", err)
	}
	for _, n := range []string{"0", "-2"} {
		cmd := newWorkerCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs([]string{"--server", "http://127.0.0.1:1", "--slots", n})
		if err := cmd.Execute(); err == nil || !strings.HasPrefix(err.Error(), "--slots: must be at least 1") {
			t.Errorf("--slots %s: %v", n, err)
		}
	}
}

// allot dev's local workers refuse --slots 0 as allot worker does, before
// anything starts, instead of running with one slot each.
func TestDevRefusesZeroSlots(t *testing.T) {
	cmd := newDevCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--slots", "0"})
	if err := cmd.Execute(); err == nil || !strings.HasPrefix(err.Error(), "--slots: must be at least 1") {
		t.Errorf("dev --slots 0: %v", err)
	}
}

func TestWithoutTokenDropsTheTokenAndNothingElse(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []string
		want []string
	}{
		{"the flag and its value", []string{"allot", "worker", "--token", "allot_x", "--name", "w1"}, []string{"allot", "worker", "--name", "w1"}},
		{"the flag with =", []string{"allot", "worker", "--token=allot_x", "--slots", "2"}, []string{"allot", "worker", "--slots", "2"}},
		{"--token-file stays", []string{"allot", "worker", "--token-file", "/etc/t"}, []string{"allot", "worker", "--token-file", "/etc/t"}},
		{"after --, arguments stay", []string{"allot", "worker", "--", "--token", "x"}, []string{"allot", "worker", "--", "--token", "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := withoutToken(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("withoutToken(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTheTokenComesFromAPrivateFileTheEnvironmentOrTheFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := write("private", "allot_fromfile\n", 0o600)
	groupReadable := write("group", "allot_x", 0o640)
	empty := write("empty", " \n", 0o600)
	t.Setenv("ALLOT_TOKEN", "allot_fromenv")
	for _, tt := range []struct {
		name    string
		flags   workerTokenFlags
		want    string
		shown   bool
		errHas  string
		warnHas string
	}{
		{name: "the environment, which must be shed", want: "allot_fromenv", shown: true},
		{name: "a private file; the environment still holds a token to shed", flags: workerTokenFlags{file: private}, want: "allot_fromfile", shown: true},
		{name: "the flag, with a warning", flags: workerTokenFlags{flag: tokenFlag{v: "allot_fromflag", set: true}}, want: "allot_fromflag", shown: true,
			warnHas: "--token puts the worker token on the command line"},
		{name: "a file group may read", flags: workerTokenFlags{file: groupReadable}, errHas: "mode 0640 lets group or others read it"},
		{name: "an empty file", flags: workerTokenFlags{file: empty}, errHas: "the file is empty"},
		{name: "both the flag and a file", flags: workerTokenFlags{file: private, flag: tokenFlag{v: "x", set: true}}, errHas: "give one of them"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var warn strings.Builder
			got, shown, err := tt.flags.read(&warn)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil || got != tt.want || shown != tt.shown {
				t.Errorf("read = %q, shown %v, %v; want %q, shown %v", got, shown, err, tt.want, tt.shown)
			}
			if !strings.Contains(warn.String(), tt.warnHas) || (tt.warnHas == "" && warn.Len() > 0) {
				t.Errorf("warning %q, want %q", warn.String(), tt.warnHas)
			}
		})
	}
}
