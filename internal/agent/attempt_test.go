//go:build unix

package agent

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

func testRunner(tailBytes int) runner {
	return runner{tailBytes: tailBytes, grace: 5 * time.Second, log: slog.New(slog.DiscardHandler)}
}

// runNow runs an attempt and cleans what it left, as the agent does once
// the report is queued.
func runNow(r runner, at *attempt) api.Report {
	rep, left := r.run(at)
	r.clean(left)
	return rep
}

func TestRunReportsExitCodeOutputAndResult(t *testing.T) {
	tests := []struct {
		name      string
		as        api.Assignment
		tailBytes int
		exitCode  int
		output    string
		errHas    string // "" = no error
		result    string // "" = none
	}{
		{
			name:     "exit code and both streams",
			as:       api.Assignment{Run: "echo out; echo err >&2; exit 3"},
			exitCode: 3, output: "out\nerr\n",
		},
		{
			name:      "the output keeps its tail",
			as:        api.Assignment{Run: "printf 0123456789; printf abcdefghij"},
			tailBytes: 10,
			output:    "abcdefghij",
		},
		{
			name:      "a cut character at the start of the tail is dropped",
			as:        api.Assignment{Run: "printf 'x\\303\\251abc'"}, // x é abc, é is 2 bytes
			tailBytes: 4,
			output:    "abc",
		},
		{
			name:   "command runs without a shell",
			as:     api.Assignment{Command: []string{"printf", "%s|", "a b", "$HOME"}},
			output: "a b|$HOME|",
		},
		{
			name:     "a command that cannot start",
			as:       api.Assignment{Command: []string{"/nonexistent/allot-test"}},
			exitCode: -1, errHas: "could not start",
		},
		{
			name:     "a missing workdir is named, not the shell",
			as:       api.Assignment{Run: "pwd", WorkDir: "/nonexistent/allot-test-dir"},
			exitCode: -1, errHas: "could not start: workdir /nonexistent/allot-test-dir: no such file or directory",
		},
		{
			name:     "a workdir that is a file is named",
			as:       api.Assignment{Run: "pwd", WorkDir: "/dev/null"},
			exitCode: -1, errHas: "could not start: workdir /dev/null: not a directory",
		},
		{
			name:     "an assignment with nothing to run",
			as:       api.Assignment{Run: "  "},
			exitCode: -1, errHas: "neither run nor command",
		},
		{
			name:     "killed by a signal reports 128+N",
			as:       api.Assignment{Run: "kill -9 $$"},
			exitCode: 137,
		},
		{
			name:   "result file round trip",
			as:     api.Assignment{Run: `printf '{"rows": 12,\n "path": "s3://b/k"}' > "$ALLOT_RESULT_FILE"`},
			result: `{"rows":12,"path":"s3://b/k"}`,
		},
		{
			name: "an empty result file is no result",
			as:   api.Assignment{Run: `: > "$ALLOT_RESULT_FILE"`},
		},
		{
			name:   "invalid result: not JSON",
			as:     api.Assignment{Run: `echo 'rows=12' > "$ALLOT_RESULT_FILE"`},
			errHas: "invalid result",
		},
		{
			name:     "invalid result: not an object, and the exit code stays",
			as:       api.Assignment{Run: `echo '[1,2]' > "$ALLOT_RESULT_FILE"; exit 4`},
			exitCode: 4, errHas: "invalid result",
		},
		{
			name:   "invalid result: too large",
			as:     api.Assignment{Run: `{ printf '{"a":"'; head -c 70000 /dev/zero | tr '\0' x; printf '"}'; } > "$ALLOT_RESULT_FILE"`},
			errHas: "larger than 64 KiB",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tailBytes := tt.tailBytes
			if tailBytes == 0 {
				tailBytes = DefaultOutputTailBytes
			}
			tt.as.Attempt = api.Attempt{Job: "j", Task: "t", Attempt: 1}
			rep := runNow(testRunner(tailBytes), newAttempt(tt.as))
			if rep.Attempt != tt.as.Attempt {
				t.Errorf("report names %+v, want %+v", rep.Attempt, tt.as.Attempt)
			}
			if rep.ExitCode != tt.exitCode {
				t.Errorf("exit code = %d, want %d (error %q)", rep.ExitCode, tt.exitCode, rep.Error)
			}
			if tt.output != "" && rep.Output != tt.output {
				t.Errorf("output = %q, want %q", rep.Output, tt.output)
			}
			if (tt.errHas == "") != (rep.Error == "") || !strings.Contains(rep.Error, tt.errHas) {
				t.Errorf("error = %q, want one containing %q", rep.Error, tt.errHas)
			}
			if string(rep.Result) != tt.result {
				t.Errorf("result = %s, want %s", rep.Result, tt.result)
			}
			if rep.Stopped {
				t.Error("reported as stopped")
			}
		})
	}
}

func TestRunSetsEnvironmentAndHidesTheToken(t *testing.T) {
	t.Setenv("ALLOT_TOKEN", "sekrit")
	t.Setenv("AGENT_VAR", "inherited")
	as := api.Assignment{
		Attempt: api.Attempt{Job: "job-1", Task: "train", Attempt: 3},
		Run:     `echo "$FOO|$AGENT_VAR|$ALLOT_JOB|$ALLOT_TASK|$ALLOT_ATTEMPT|${ALLOT_TOKEN-unset}"`,
		Env:     map[string]string{"FOO": "bar baz", "AGENT_VAR": "overridden", "ALLOT_JOB": "forged"},
	}
	rep := runNow(testRunner(DefaultOutputTailBytes), newAttempt(as))
	if want := "bar baz|overridden|job-1|train|3|unset\n"; rep.Output != want {
		t.Errorf("output = %q, want %q", rep.Output, want)
	}
}

func TestRunPicksTheWorkingDirectory(t *testing.T) {
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base, abs := real(t.TempDir()), real(t.TempDir())
	if err := os.Mkdir(filepath.Join(base, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	const tmpDir = "(the attempt's temp dir)"
	tests := []struct {
		name     string
		base     string
		workdir  string
		want     string
		startErr bool
	}{
		{name: "the assignment's absolute workdir", base: base, workdir: abs, want: abs},
		{name: "a relative workdir is under the agent's", base: base, workdir: "sub", want: filepath.Join(base, "sub")},
		{name: "the agent's workdir", base: base, want: base},
		{name: "a fresh directory", want: tmpDir},
		{name: "a missing workdir fails to start", workdir: filepath.Join(abs, "missing"), startErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRunner(DefaultOutputTailBytes)
			r.workDir = tt.base
			as := api.Assignment{Run: `pwd -P; cd "$(dirname "$ALLOT_RESULT_FILE")" && pwd -P`, WorkDir: tt.workdir}
			rep := runNow(r, newAttempt(as))
			if tt.startErr {
				if rep.ExitCode != -1 || !strings.Contains(rep.Error, "could not start") {
					t.Errorf("report = %+v, want a start failure", rep)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(rep.Output), "\n")
			if len(lines) != 2 {
				t.Fatalf("output = %q (error %q)", rep.Output, rep.Error)
			}
			pwd, resultDir := lines[0], lines[1]
			want := tt.want
			if want == tmpDir {
				want = resultDir
			}
			if pwd != want {
				t.Errorf("working directory = %q, want %q", pwd, want)
			}
			if _, err := os.Stat(resultDir); !os.IsNotExist(err) {
				t.Errorf("the attempt's directory %s is still there (%v)", resultDir, err)
			}
		})
	}
}

func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	tests := []struct {
		name     string
		run      string // PID is replaced by the file the child's PID goes to
		grace    time.Duration
		exitCode int
	}{
		{name: "SIGTERM ends the task and its child", run: "sleep 30 & echo $! > PID; wait",
			grace: 5 * time.Second, exitCode: 128 + 15},
		{name: "SIGKILL after grace ends what ignores SIGTERM", run: "trap '' TERM; sleep 30 & echo $! > PID; wait",
			grace: 200 * time.Millisecond, exitCode: 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "child")
			r := testRunner(DefaultOutputTailBytes)
			r.grace = tt.grace
			as := api.Assignment{Run: strings.ReplaceAll(tt.run, "PID", pidFile), Timeout: spec.Duration(200 * time.Millisecond)}
			start := time.Now()
			rep := runNow(r, newAttempt(as))
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			if rep.Error != "timed out after 200ms" || rep.ExitCode != tt.exitCode {
				t.Errorf("report = exit %d, error %q; want exit %d, timed out", rep.ExitCode, rep.Error, tt.exitCode)
			}
			child := readPID(t, pidFile)
			waitFor(t, "the child to die", func() bool { return gone(child) })
		})
	}
}

func TestLeftoversOfAFinishedTaskAreKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	start := time.Now()
	rep := runNow(testRunner(DefaultOutputTailBytes), newAttempt(api.Assignment{
		Run: "sleep 30 & echo $! > " + pidFile + "; echo done"}))
	if d := time.Since(start); d > outputDrain {
		t.Errorf("took %v: the background child held the task", d)
	}
	if rep.ExitCode != 0 || rep.Output != "done\n" {
		t.Errorf("report = %+v", rep)
	}
	child := readPID(t, pidFile)
	waitFor(t, "the background child to die", func() bool { return gone(child) })
}

func TestTerminateBeforeStartRunsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	at := newAttempt(api.Assignment{Run: "touch " + marker})
	at.terminate("stopped by the server", true, time.Second)
	rep := runNow(testRunner(DefaultOutputTailBytes), at)
	if !rep.Stopped || rep.ExitCode != -1 || !strings.Contains(rep.Error, "before it started") {
		t.Errorf("report = %+v", rep)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Error("the task ran")
	}
}

func TestReadResultKeepsTheObjectCompact(t *testing.T) {
	d := t.TempDir()
	dir, err := os.OpenRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	p := filepath.Join(d, "r.json")
	if err := os.WriteFile(p, []byte("\n { \"a\" : [1, 2] }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readResult(dir, "r.json", nil)
	if err != nil || string(got) != `{"a":[1,2]}` {
		t.Errorf("readResult = %s, %v", got, err)
	}
	if !json.Valid(got) {
		t.Error("not JSON")
	}
	if err := os.WriteFile(p, []byte("null"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readResult(dir, "r.json", nil); err == nil {
		t.Error("null accepted as an object")
	}
}
