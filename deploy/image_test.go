package deploy

import (
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the repository's root, the image's build context.
const repoRoot = ".."

// TestImageBuildStageBuildsAStaticBinary checks that the binary the
// Dockerfile builds needs no dynamic loader: the image's base
// (distroless/static) has no libc.
func TestImageBuildStageBuildsAStaticBinary(t *testing.T) {
	b := imageBinary(t)
	if b.env["CGO_ENABLED"] != "0" {
		t.Errorf("the build stage's go build runs with CGO_ENABLED=%q; want 0 for a static binary", b.env["CGO_ENABLED"])
	}
	if problems := dynamicParts(t, b.binary); len(problems) > 0 {
		t.Errorf("the image's binary is not static: %s", strings.Join(problems, "; "))
	}
	version, err := exec.Command(b.binary, "--version").Output()
	if err != nil || !strings.Contains(string(version), b.vars["VERSION"]) {
		t.Errorf("allot --version = %q, %v; want the VERSION build argument %q", version, err, b.vars["VERSION"])
	}
}

// built is the image's binary, built once for the package's tests.
var built struct {
	once sync.Once
	dir  string
	b    goBuild
	err  error
	skip string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// imageBinary runs the `go build` of the Dockerfile's build stage, with its
// environment and flags as written there, on a copy of the build context
// that .dockerignore leaves, and returns it with the path of the binary in
// binary. This machine cannot pull base images, so that is the part of
// `docker build` that can be checked here.
func imageBinary(t *testing.T) goBuild {
	t.Helper()
	built.once.Do(func() { built.b, built.skip, built.err = buildImageBinary() })
	if built.skip != "" {
		t.Skip(built.skip)
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.b
}

func buildImageBinary() (b goBuild, skip string, err error) {
	if runtime.GOOS != "linux" {
		return b, fmt.Sprintf("the image's binary is a Linux ELF; this is %s", runtime.GOOS), nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return b, "no go command on PATH to run the build stage's go build", nil
	}
	df, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		return b, "", err
	}
	if b, err = buildStageGoBuild(string(df), "build"); err != nil {
		return b, "", err
	}
	ignore, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		return b, "", err
	}
	patterns, err := parseDockerignore(string(ignore))
	if err != nil {
		return b, "", err
	}
	if built.dir, err = os.MkdirTemp("", "allot-image-"); err != nil {
		return b, "", err
	}
	ctx := filepath.Join(built.dir, "src")
	if err := copyContext(repoRoot, ctx, patterns); err != nil {
		return b, "", err
	}
	b.binary = filepath.Join(built.dir, "allot")
	args := slices.Clone(b.args)
	args[b.output] = b.binary
	cmd := exec.Command(goTool, append([]string{"build"}, args...)...)
	cmd.Dir = ctx
	cmd.Env = buildEnv(os.Environ(), b.env)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return b, "", fmt.Errorf("go build %s (in a copy of the build context): %v\n%s", strings.Join(args, " "), err, msg)
	}
	return b, "", nil
}

// TestDynamicPartsFindsADynamicBinary shows that the check above can fail:
// the machine's own shell is linked against libc.
func TestDynamicPartsFindsADynamicBinary(t *testing.T) {
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		f.Close()
		if len(dynamicParts(t, p)) == 0 {
			t.Errorf("%s: found no dynamic parts; a libc-linked binary has an interpreter and a dynamic section", p)
		}
		return
	}
	t.Skip("no dynamically linked ELF binary on this machine to check against")
}

// dynamicParts lists what makes the ELF binary at p depend on a dynamic
// loader: an interpreter, a dynamic section, shared libraries.
func dynamicParts(t *testing.T, p string) []string {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var problems []string
	for _, prog := range f.Progs {
		switch prog.Type {
		case elf.PT_INTERP:
			interp, _ := io.ReadAll(prog.Open())
			problems = append(problems, fmt.Sprintf("interpreter %q", strings.TrimRight(string(interp), "\x00")))
		case elf.PT_DYNAMIC:
			problems = append(problems, "a dynamic segment")
		}
	}
	if f.Section(".dynamic") != nil {
		problems = append(problems, "a .dynamic section")
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		problems = append(problems, "shared libraries "+strings.Join(libs, ", "))
	}
	return problems
}

// goBuild is a `go build` line of a Dockerfile: its environment
// assignments, its arguments after `go build`, the index of -o's value
// among them, and the build arguments in scope.
type goBuild struct {
	env    map[string]string
	args   []string
	output int
	vars   map[string]string
	binary string // where the test built it
}

// buildStageGoBuild finds the one RUN of stage that runs `go build`, and
// expands the build arguments (ARG, with their defaults) in it.
func buildStageGoBuild(dockerfile, stage string) (goBuild, error) {
	vars := map[string]string{}
	var inStage bool
	var found []string
	for _, ins := range instructions(dockerfile) {
		word, rest, _ := strings.Cut(ins, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "FROM":
			f := strings.Fields(rest)
			inStage = len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") && f[len(f)-1] == stage
		case "ARG":
			// Global ARGs (before the first FROM) are visible to FROM lines
			// only; the stage's are what its RUN lines see.
			if !inStage {
				continue
			}
			for _, a := range strings.Fields(rest) {
				k, v, _ := strings.Cut(a, "=")
				vars[k] = strings.Trim(v, `"`)
			}
		case "RUN":
			if inStage && strings.Contains(rest, "go build") {
				found = append(found, rest)
			}
		}
	}
	if len(found) != 1 {
		return goBuild{}, fmt.Errorf("stage %q: %d RUN lines run go build, want 1", stage, len(found))
	}
	words, err := shellWords(found[0], vars)
	if err != nil {
		return goBuild{}, fmt.Errorf("stage %q: %w", stage, err)
	}
	for len(words) > 0 && strings.HasPrefix(words[0], "--mount=") {
		words = words[1:]
	}
	b := goBuild{env: map[string]string{}, output: -1, vars: vars}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		k, v, _ := strings.Cut(words[0], "=")
		b.env[k] = v
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		return goBuild{}, fmt.Errorf("stage %q: %q: want [VAR=VALUE...] go build ...", stage, found[0])
	}
	b.args = words[2:]
	for i, a := range b.args {
		switch {
		case a == "&&" || a == ";" || a == "|" || a == "||":
			return goBuild{}, fmt.Errorf("stage %q: the go build line runs more than one command (%q): keep it alone", stage, a)
		case a == "-o" && i+1 < len(b.args):
			b.output = i + 1
		}
	}
	if b.output < 0 {
		return goBuild{}, fmt.Errorf("stage %q: go build has no -o", stage)
	}
	return b, nil
}

// instructions are a Dockerfile's instructions, comments dropped and
// continued lines joined.
func instructions(dockerfile string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(dockerfile) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// shellWords splits a command as the shell would for the words a RUN
// line of this Dockerfile uses: single and double quotes, and $NAME and
// ${NAME} expanded from vars (an unknown name is an error).
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'' && c != '\'':
			w.WriteByte(c)
		case c == '\'' || c == '"':
			switch quote {
			case 0:
				quote, inWord = c, true
			case c:
				quote = 0
			default:
				w.WriteByte(c)
			}
		case c == '$':
			name, n := varName(s[i+1:])
			if name == "" {
				return nil, fmt.Errorf("%q: a $ that names no variable", s)
			}
			v, ok := vars[name]
			if !ok {
				return nil, fmt.Errorf("%q: $%s is no ARG of the stage", s, name)
			}
			w.WriteString(v)
			inWord = true
			i += n
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// varName reads NAME or {NAME} at the start of s, and how many bytes it
// took.
func varName(s string) (string, int) {
	if rest, ok := strings.CutPrefix(s, "{"); ok {
		name, _, found := strings.Cut(rest, "}")
		if !found {
			return "", 0
		}
		return name, len(name) + 2
	}
	n := 0
	for n < len(s) && (s[n] == '_' || 'A' <= s[n] && s[n] <= 'Z' || 'a' <= s[n] && s[n] <= 'z' || n > 0 && '0' <= s[n] && s[n] <= '9') {
		n++
	}
	return s[:n], n
}

// buildEnv is the environment of the build: this one, with the RUN line's
// assignments; an empty one (an ARG without a value, like TARGETARCH
// outside buildx) leaves the variable unset, which Go takes as the
// default, and GOFLAGS is dropped as the golang image has none.
func buildEnv(environ []string, set map[string]string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := set[k]; !over && k != "GOFLAGS" {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// parseDockerignore reads the patterns of a .dockerignore this test
// understands: paths from the context's root, with filepath.Match's
// wildcards; `!` exceptions and `**` are refused rather than misread.
func parseDockerignore(s string) ([]string, error) {
	var patterns []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") || strings.Contains(line, "**") {
			return nil, fmt.Errorf(".dockerignore: %q: this test does not read exceptions or **; teach it, or write the pattern without", line)
		}
		p := path.Clean(strings.Trim(line, "/"))
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf(".dockerignore: %q: %w", line, err)
		}
		patterns = append(patterns, p)
	}
	return patterns, nil
}

// ignored says whether .dockerignore's patterns leave rel (slash-separated,
// from the context's root) out: a pattern that matches a directory leaves
// out everything under it.
func ignored(rel string, patterns []string) bool {
	for _, p := range patterns {
		for q := rel; q != "." && q != "/"; q = path.Dir(q) {
			if ok, _ := path.Match(p, q); ok {
				return true
			}
		}
	}
	return false
}

// copyContext copies the regular files of src that the patterns do not
// leave out into dst.
func copyContext(src, dst string, patterns []string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if ignored(filepath.ToSlash(rel), patterns) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

func TestDockerignoreMatchesAsDockerDoes(t *testing.T) {
	patterns := []string{".git", "docs", "*.test", "allot-data"}
	tests := []struct {
		rel  string
		want bool
	}{
		{".git/HEAD", true},
		{"docs/deploy.md", true},
		{"agent.test", true},
		{"allot-data/allot.db", true},
		{"internal/agent/agent.go", false},
		// Docker matches from the context's root: *.test is not **/*.test.
		{"cmd/allot/allot.test", false},
		{"internal/docs/x.go", false},
	}
	for _, tt := range tests {
		if got := ignored(tt.rel, patterns); got != tt.want {
			t.Errorf("ignored(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}

func TestBuildStageGoBuildReadsTheRunLine(t *testing.T) {
	tests := []struct {
		name, dockerfile string
		wantEnv          map[string]string
		wantArgs         []string
		wantErr          string
	}{
		{
			name: "flags, quotes, ARGs and a continued line",
			dockerfile: `ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
ARG TARGETARCH
ARG VERSION=dev
# a comment
RUN --mount=type=cache,target=/go/pkg/mod \
    CGO_ENABLED=0 GOARCH=${TARGETARCH} go build -ldflags="-s -X main.version=${VERSION}" -o /out/allot ./cmd/allot
FROM scratch AS final
RUN go build -o /other ./other
`,
			wantEnv:  map[string]string{"CGO_ENABLED": "0", "GOARCH": ""},
			wantArgs: []string{"-ldflags=-s -X main.version=dev", "-o", "/out/allot", "./cmd/allot"},
		},
		{
			name:       "a global ARG is not the stage's",
			dockerfile: "ARG VERSION=1\nFROM golang AS build\nRUN go build -ldflags=-X=main.version=$VERSION -o x .\n",
			wantErr:    "$VERSION is no ARG",
		},
		{
			name:       "two commands on the line",
			dockerfile: "FROM golang AS build\nRUN go build -o x . && strip x\n",
			wantErr:    "more than one command",
		},
		{
			name:       "no go build in the stage",
			dockerfile: "FROM golang AS compile\nRUN go build -o x .\n",
			wantErr:    "0 RUN lines",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := buildStageGoBuild(tt.dockerfile, "build")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(b.env) != fmt.Sprint(tt.wantEnv) || !slices.Equal(b.args, tt.wantArgs) || b.args[b.output] != "/out/allot" {
				t.Errorf("got env %v args %q (-o %d); want env %v args %q", b.env, b.args, b.output, tt.wantEnv, tt.wantArgs)
			}
		})
	}
}
