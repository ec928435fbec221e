package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The docs test runs every shell command of README.md and docs/*.md as
// written, so that the docs cannot drift from the program: each fenced
// block tagged sh, bash or shell is run by bash, in order, file by file,
// against the allot binary and a real `allot dev` server the test starts
// for the file (ALLOT_SERVER points at it; its two local workers run real
// tasks). A block runs in a scratch directory that holds the repository's
// top-level entries (as links) and ./allot, with allot first on the PATH.
//
// A block that needs what the test cannot have (another machine, root,
// PostgreSQL, minutes of benchmark, a file that is not in the repository)
// is skipped by a marker on the last line before its fence, with the
// reason:
//
//	<!-- docs-test: skip (starts a server on the default port) -->
//
// A marker without a reason, or one the test does not know, fails the
// test: every skip says why. A command that fails or runs longer than
// docsCommandTimeout fails the test naming the file, the line and the
// command.
//
// The commands the docs name outside shell blocks (code spans, transcript
// lines, skipped blocks, the examples' comments) are checked by
// TestDocsInlineCommands (docs_inline_test.go): each against the real
// command tree, and the complete offline ones (plan, sim, explain -f) run.

// docsCommandTimeout bounds one command of a block; a block gets it once
// per command.
const docsCommandTimeout = 30 * time.Second

// docBlock is a fenced shell block of a doc.
type docBlock struct {
	file string
	line int // of the opening fence
	body string
	// skip is the reason the block is not run, "" when it runs.
	skip string
}

var (
	fenceRE  = regexp.MustCompile("^(\\s*)```\\s*([A-Za-z0-9_+-]*)\\s*$")
	markerRE = regexp.MustCompile(`^<!--\s*docs-test:\s*(.*?)\s*-->$`)
	skipRE   = regexp.MustCompile(`^skip\s*\((.+)\)$`)
)

// shellLangs are the fence tags of blocks the test runs.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}

// shellBlocks returns the fenced shell blocks of a doc's text, each with
// its skip reason, or an error naming a bad marker or an unclosed fence.
func shellBlocks(file, text string) ([]docBlock, error) {
	lines := strings.Split(text, "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if mm := markerRE.FindStringSubmatch(strings.TrimSpace(lines[i])); mm != nil {
				if !skipRE.MatchString(mm[1]) {
					return nil, fmt.Errorf("%s:%d: unknown docs-test marker %q: write <!-- docs-test: skip (reason) -->", file, i+1, mm[1])
				}
				if next := nextNonBlank(lines, i+1); next < 0 || fenceRE.FindStringSubmatch(lines[next]) == nil {
					return nil, fmt.Errorf("%s:%d: a docs-test marker must stand right before a fenced block", file, i+1)
				}
			}
			continue
		}
		start := i
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%s:%d: the fenced block is not closed", file, start+1)
		}
		i = end
		if !shellLangs[m[2]] {
			continue
		}
		body := make([]string, 0, end-start-1)
		for _, l := range lines[start+1 : end] {
			body = append(body, strings.TrimPrefix(l, m[1])) // a block in a list item is indented
		}
		b := docBlock{file: file, line: start + 1, body: strings.Join(body, "\n") + "\n"}
		if prev := prevNonBlank(lines, start-1); prev >= 0 {
			if mm := markerRE.FindStringSubmatch(strings.TrimSpace(lines[prev])); mm != nil {
				s := skipRE.FindStringSubmatch(mm[1])
				if s == nil || strings.TrimSpace(s[1]) == "" {
					return nil, fmt.Errorf("%s:%d: a docs-test skip needs a reason: <!-- docs-test: skip (reason) -->", file, prev+1)
				}
				b.skip = strings.TrimSpace(s[1])
			}
		}
		out = append(out, b)
	}
	return out, nil
}

func nextNonBlank(lines []string, i int) int {
	for ; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			return i
		}
	}
	return -1
}

func prevNonBlank(lines []string, i int) int {
	for ; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return i
		}
	}
	return -1
}

func TestShellBlocksAndMarkers(t *testing.T) {
	doc := "# T\n\n```sh\nallot list\n```\n\n<!-- docs-test: skip (needs PostgreSQL) -->\n```bash\ncreatedb x\n```\n\n```yaml\nid: x\n```\n\n```\n$ allot get x\n```\n" +
		"- a step:\n\n  ```sh\n  allot get x\n  ```\n"
	bs, err := shellBlocks("t.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 || bs[0].line != 3 || bs[0].body != "allot list\n" || bs[0].skip != "" ||
		bs[1].line != 8 || bs[1].skip != "needs PostgreSQL" || bs[2].line != 21 || bs[2].body != "allot get x\n" {
		t.Errorf("blocks %+v", bs)
	}
	for _, bad := range []string{
		"<!-- docs-test: skip -->\n```sh\nx\n```\n",
		"<!-- docs-test: skip () -->\n```sh\nx\n```\n",
		"<!-- docs-test: run later -->\n```sh\nx\n```\n",
		"<!-- docs-test: skip (x) -->\n\ntext\n```sh\nx\n```\n",
		"```sh\nx\n",
	} {
		if _, err := shellBlocks("t.md", bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// docFiles lists README.md and the docs, relative to the repository.
func docFiles(t *testing.T, root string) []string {
	files := []string{"README.md"}
	for _, pat := range []string{"docs/*.md", "docs/*/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	return files
}

func TestDocsCommandsRunAsWritten(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ran, skipped := 0, 0
	for _, file := range docFiles(t, root) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := shellBlocks(file, string(text))
		if err != nil {
			t.Error(err)
			continue
		}
		var run []docBlock
		for _, b := range blocks {
			if b.skip == "" {
				run = append(run, b)
			} else {
				skipped++
			}
		}
		if len(run) == 0 {
			continue
		}
		ran += len(run)
		t.Run(strings.ReplaceAll(file, "/", "_"), func(t *testing.T) {
			env := newDocsEnv(t, root)
			for _, b := range run {
				if err := env.run(b); err != nil {
					t.Error(err)
				}
			}
		})
	}
	t.Logf("ran %d shell blocks of the docs, skipped %d (each with its reason)", ran, skipped)
	if ran == 0 {
		t.Error("no shell block of the docs ran")
	}
}

// docsEnv is where a doc's blocks run: a scratch directory, the binary,
// and a dev server with two workers.
type docsEnv struct {
	t      *testing.T
	dir    string
	binDir string
	url    string
}

func newDocsEnv(t *testing.T, root string) *docsEnv {
	t.Helper()
	e := &docsEnv{t: t}
	e.dir, e.binDir = newScratchDir(t, root)
	addr := freePort(t)
	e.url = "http://" + addr
	dev := exec.Command(bin, "dev", "--listen", addr, "--data-dir", t.TempDir(), "--workers", "2", "--slots", "2")
	dev.Stdout, dev.Stderr = logWriter(t, "dev"), logWriter(t, "dev")
	dev.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(dev, 10*time.Second) })
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(e.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("allot dev at %s not ready", e.url)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The dev workers register just after the server is ready.
	for deadline = time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, err := exec.Command(bin, "workers", "--server", e.url, "-o", "json").Output()
		if err == nil && strings.Count(string(out), `"name"`) >= 2 {
			break
		}
	}
	return e
}

// newScratchDir makes the directory the docs' commands run in: it holds
// the repository's top-level entries (as links) and ./allot; binDir holds
// only allot, for the PATH.
func newScratchDir(t *testing.T, root string) (dir, binDir string) {
	t.Helper()
	dir, binDir = t.TempDir(), t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		if n := de.Name(); n != ".git" && n != "allot" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{dir, binDir} {
		if err := os.Symlink(bin, filepath.Join(d, "allot")); err != nil {
			t.Fatal(err)
		}
	}
	return dir, binDir
}

// stopGroup interrupts a process group (as Ctrl-C does), then kills it if
// it has not ended within grace.
func stopGroup(cmd *exec.Cmd, grace time.Duration) {
	if cmd.Process == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	// Whatever the block left in the background goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// lockedBuffer is an output buffer that the block writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// run runs one block with bash and says where it failed: the doc's file
// and line, the command, its output. A DEBUG trap records the command
// being run, so that each command gets docsCommandTimeout of its own.
func (e *docsEnv) run(b docBlock) error {
	status := filepath.Join(e.t.TempDir(), "status")
	// One line of prelude: script line n+1 is the block's line n.
	script := `set -eo pipefail; __n=0; trap '__n=$((__n+1)); echo "$__n $LINENO" > "$ALLOT_DOCS_STATUS"' DEBUG` + "\n" + b.body
	cmd := exec.Command("bash", "-c", script, "docs-block")
	cmd.Dir = e.dir
	cmd.Env = append(docsEnviron(), "ALLOT_SERVER="+e.url, "ALLOT_DOCS_STATUS="+status,
		"PATH="+e.binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }() // what it left in the background
	where := func() (int, string) {
		raw, _ := os.ReadFile(status)
		f := strings.Fields(string(raw))
		if len(f) != 2 {
			return b.line, ""
		}
		n, _ := strconv.Atoi(f[1])
		lines := strings.Split(b.body, "\n")
		text := ""
		if n >= 2 && n-2 < len(lines) {
			text = strings.TrimSpace(lines[n-2])
		}
		return b.line + n - 1, text
	}
	last, since := "", time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err == nil {
				return nil
			}
			line, text := where()
			return fmt.Errorf("%s:%d: `%s` failed (%v); output:\n%s", b.file, line, text, err, out.tail(3000))
		case <-tick.C:
			raw, _ := os.ReadFile(status)
			if s := string(raw); s != last {
				last, since = s, time.Now()
				continue
			}
			if time.Since(since) > docsCommandTimeout {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				line, text := where()
				return fmt.Errorf("%s:%d: `%s` ran longer than %s; output:\n%s", b.file, line, text, docsCommandTimeout, out.tail(3000))
			}
		}
	}
}

// docsEnviron is the test's environment without the allot client's
// settings, which the docs' commands must not inherit.
func docsEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "ALLOT_TOKEN" && k != "ALLOT_SERVER" && k != "ALLOT_CA" {
			out = append(out, kv)
		}
	}
	return out
}
