package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The docs test also covers the commands the docs name outside shell
// blocks (TestDocsInlineCommands): `allot ...` code spans in the prose and
// tables of README.md, docs/*.md and docs/*/*.md (a span may wrap onto
// the paragraph's next line; `\|` in a table cell is "|"), spans that
// leave "allot" out but start with a subcommand and name a flag
// (`submit FILE --set K=V`), `$ allot ...` lines of transcripts (untagged
// fenced blocks), the allot lines of skipped shell blocks, and the
// `# allot ...` lines of the comments of examples/*.yaml and
// examples/*/*.yaml (cut at "→" and at the prose after the command).
//
// Each is parsed against the real command tree, read from the binary's
// --help: every subcommand must exist, every flag must be one of its
// command's, and a command whose usage line names no argument must not be
// given one. A doc that names a subcommand or flag that does not exist
// fails the test naming the file and the line. A flag with no value at
// the end of a span (`allot sim --density`), or a span with only a
// command's name (`allot plan`), is a mention: checked, not run.
//
// A command that is complete and offline is also run, in a scratch
// directory as the blocks are, with the same per-command timeout:
// `allot plan`, `allot sim`, `allot explain -f`, `allot help`, and any
// command with --help or --version. Complete means no placeholder (an
// upper-case word such as FILE, JOB/TASK or N, "…", "...", [optional]
// parts, a|b alternatives, $VAR) and that its -f/--file is in the
// repository (a missing one fails the test). By rule, a --trace or
// --azure file that is not in the repository is a download, and the
// command is skipped with that reason in the test's log. A command
// written in several places runs once; a failure names every place.
// Commands with placeholders, commands that need a server and the
// commands of skipped blocks are only parsed.

// docCommand is an allot command named in a doc.
type docCommand struct {
	file string
	line int
	text string // as written, after "allot"'s table escapes are undone
	// exact is set when the command ends where the text ends; the
	// examples' comments go on with prose after the command, which the
	// parser drops once the command's words end.
	exact bool
	// parseOnly is set for the commands of a skipped shell block: the
	// block says why they cannot run here.
	parseOnly bool
	// bare is set for a code span that would be a command with "allot"
	// before it, if its first word is a subcommand.
	bare bool
}

var (
	promptRE       = regexp.MustCompile(`^\s*\$ (?:\./)?(allot( .*)?)$`)
	yamlCommentRE  = regexp.MustCompile(`^#\s*(allot .*)$`)
	helpFlagRE     = regexp.MustCompile(`^\s+(?:-([A-Za-z0-9]), )?--([A-Za-z0-9][A-Za-z0-9-]*)(?: ([A-Za-z0-9.\[\]]+))?(?:\s{2,}|$)`)
	helpCommandRE  = regexp.MustCompile(`^\s+([a-z][a-z0-9-]*)\s+\S`)
	placeholderRE  = regexp.MustCompile(`^[A-Z][A-Z0-9_]*([./\[]|$)`)
	shellLineEndRE = regexp.MustCompile(`\s(\||&&|&|;|>|2>|#)(\s|$)`)
	// spanEndRE ends a command in a code span where the shell would;
	// "|" separates alternatives there.
	bareFirstRE = regexp.MustCompile(`^[a-z][a-z-]*$`)
	bareFlagRE  = regexp.MustCompile(`(^|\s)--?[a-z]`)
	spanEndRE   = regexp.MustCompile(`\s(&&|&|;|>|2>)(\s|$)`)
)

// markdownCommands returns the allot commands of a doc outside its run
// shell blocks: code spans, transcript lines and lines of skipped shell
// blocks.
func markdownCommands(file, text string) []docCommand {
	lines := strings.Split(text, "\n")
	var out []docCommand
	inFence, fenceLang, skipped := false, "", false
	var para []int // the lines of the paragraph being read
	flush := func() {
		if len(para) == 0 {
			return
		}
		var joined strings.Builder
		starts := make([]int, len(para)) // offset of each line in joined
		for k, n := range para {
			if k > 0 {
				joined.WriteByte(' ')
			}
			starts[k] = joined.Len()
			joined.WriteString(strings.TrimSpace(lines[n]))
		}
		for _, sp := range codeSpans(joined.String()) {
			t := strings.ReplaceAll(sp.text, `\|`, "|") // a pipe in a table cell
			if loc := spanEndRE.FindStringIndex(t); loc != nil {
				t = t[:loc[0]]
			}
			k := sort.SearchInts(starts, sp.at+1) - 1
			t = strings.TrimSpace(t)
			if strings.HasPrefix(t, "allot ") {
				out = append(out, docCommand{file: file, line: para[k] + 1, text: t, exact: true})
			} else if first, rest, ok := strings.Cut(t, " "); ok && bareFirstRE.MatchString(first) && bareFlagRE.MatchString(rest) {
				// Perhaps a command without its "allot" (`submit
				// FILE --set K=V`): kept when first is a subcommand.
				// It must name a flag, or it is likely a log line
				// (`worker registered`).
				out = append(out, docCommand{file: file, line: para[k] + 1, text: "allot " + t, exact: true, parseOnly: true, bare: true})
			}
		}
		para = para[:0]
	}
	for i, l := range lines {
		if m := fenceRE.FindStringSubmatch(l); m != nil || (inFence && strings.HasPrefix(strings.TrimSpace(l), "```")) {
			flush()
			if inFence {
				inFence = false
				continue
			}
			inFence, fenceLang, skipped = true, m[2], false
			if prev := prevNonBlank(lines, i-1); prev >= 0 && markerRE.MatchString(strings.TrimSpace(lines[prev])) {
				skipped = true
			}
			continue
		}
		if inFence {
			if shellLangs[fenceLang] {
				// A run block is checked by running it; a skipped one
				// by parsing its allot commands.
				t := strings.TrimPrefix(strings.TrimSpace(l), "./")
				if !skipped || !strings.HasPrefix(t, "allot ") || (i > 0 && strings.HasSuffix(lines[i-1], "\\")) {
					continue
				}
				for j := i; strings.HasSuffix(t, "\\") && j+1 < len(lines); j++ {
					t = strings.TrimSuffix(t, "\\") + " " + strings.TrimSpace(lines[j+1])
				}
				if loc := shellLineEndRE.FindStringIndex(t); loc != nil {
					t = t[:loc[0]]
				}
				out = append(out, docCommand{file: file, line: i + 1, text: strings.TrimSpace(t), exact: true, parseOnly: true})
				continue
			}
			if m := promptRE.FindStringSubmatch(l); m != nil {
				t := m[1]
				if loc := shellLineEndRE.FindStringIndex(t); loc != nil {
					t = t[:loc[0]]
				}
				out = append(out, docCommand{file: file, line: i + 1, text: strings.TrimSpace(t), exact: true})
			}
			continue
		}
		// Code spans may wrap onto the paragraph's next lines.
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#") {
			flush()
		}
		if t != "" {
			para = append(para, i)
		}
		if strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#") {
			flush() // a table row or a heading stands alone
		}
	}
	flush()
	return out
}

// codeSpan is a code span of a paragraph: its text and the offset of its
// opening backticks.
type codeSpan struct {
	at   int
	text string
}

// codeSpans finds the code spans of a paragraph as CommonMark does: a run
// of n backticks opens one, the next run of exactly n closes it, and a
// run that is never closed is text.
func codeSpans(s string) []codeSpan {
	var out []codeSpan
	run := func(i int) int {
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := run(i)
		closed := false
		for j := i + n; j < len(s); {
			if s[j] != '`' {
				j++
				continue
			}
			m := run(j)
			if m == n {
				text := s[i+n : j]
				if len(text) > 1 && text[0] == ' ' && text[len(text)-1] == ' ' {
					text = text[1 : len(text)-1]
				}
				out = append(out, codeSpan{at: i, text: text})
				i, closed = j+m, true
				break
			}
			j += m
		}
		if !closed {
			i += n
		}
	}
	return out
}

// exampleCommands returns the `# allot ...` lines of an example's
// comments, cut at the "→" that introduces what they print.
func exampleCommands(file, text string) []docCommand {
	var out []docCommand
	for i, l := range strings.Split(text, "\n") {
		m := yamlCommentRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		t, _, _ := strings.Cut(m[1], "→")
		out = append(out, docCommand{file: file, line: i + 1, text: strings.TrimSpace(t)})
	}
	return out
}

// word is one shell word of a command; quoted words are never
// placeholders.
type word struct {
	s      string
	quoted bool
}

// shellWords splits a command as the shell does for the simple commands
// docs show: blanks separate words, quotes group them.
func shellWords(s string) ([]word, error) {
	var out []word
	var cur strings.Builder
	in, quoted, started := rune(0), false, false
	for _, r := range s {
		switch {
		case in != 0:
			if r == in {
				in = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			in, quoted, started = r, true, true
		case r == ' ' || r == '\t':
			if started {
				out = append(out, word{cur.String(), quoted})
				cur.Reset()
				quoted, started = false, false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if in != 0 {
		return nil, fmt.Errorf("unclosed quote")
	}
	if started {
		out = append(out, word{cur.String(), quoted})
	}
	return out, nil
}

// isPlaceholder says whether a word stands for something the reader
// supplies, or marks optional or alternative parts.
func isPlaceholder(w word) bool {
	if w.quoted {
		return false
	}
	return placeholderRE.MatchString(w.s) || strings.Contains(w.s, "$") || strings.Contains(w.s, "…") || strings.Contains(w.s, "...") ||
		strings.ContainsAny(w.s, "[]|")
}

// cmdHelp is what one command's --help says: its subcommands and flags
// (true for a flag that takes a value).
type cmdHelp struct {
	subs  map[string]bool
	flags map[string]bool
	short map[string]string // shorthand → flag name
	// args is set when the command's usage line names a positional
	// argument (explain JOB), not only flags (plan -f SCENARIO).
	args bool
}

// usageTakesArgs says whether a usage line, after the command's name,
// names a positional argument: a word that is neither a flag, a flag's
// value, "|" nor "...".
func usageTakesArgs(rest string) bool {
	ws := strings.Fields(rest)
	for i := 0; i < len(ws); i++ {
		w := strings.Trim(ws[i], "[]()")
		switch {
		case w == "" || w == "|" || w == "..." || w == "flags" || w == "command":
		case strings.HasPrefix(w, "-") && w != "-":
			if !strings.Contains(w, "=") && i+1 < len(ws) {
				if n := strings.Trim(ws[i+1], "[]()"); n != "" && n != "|" && !strings.HasPrefix(n, "-") {
					i++
				}
			}
		default:
			return true
		}
	}
	return false
}

// commandTree reads the command tree from the binary's --help, one
// command at a time, on demand.
type commandTree struct {
	bin   string
	root  string // of the repository, for the examples' file arguments
	cache map[string]*cmdHelp
}

func (c *commandTree) help(path []string) (*cmdHelp, error) {
	key := strings.Join(path, " ")
	if h, ok := c.cache[key]; ok {
		return h, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), docsCommandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.bin, append(append([]string{}, path...), "--help")...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("allot %s --help: %v\n%s", key, err, out)
	}
	h := &cmdHelp{subs: map[string]bool{}, flags: map[string]bool{}, short: map[string]string{}}
	section := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") {
			section = l
			continue
		}
		switch section {
		case "Usage:":
			if u := strings.TrimSpace(l); !h.args && strings.HasPrefix(u, strings.TrimSpace("allot "+key)) {
				h.args = usageTakesArgs(strings.TrimPrefix(u, strings.TrimSpace("allot "+key)))
			}
		case "Available Commands:", "Additional Commands:":
			if m := helpCommandRE.FindStringSubmatch(l); m != nil {
				h.subs[m[1]] = true
			}
		case "Flags:", "Global Flags:":
			if m := helpFlagRE.FindStringSubmatch(l); m != nil {
				h.flags[m[2]] = m[3] != ""
				if m[1] != "" {
					h.short[m[1]] = m[2]
				}
			}
		}
	}
	c.cache[key] = h
	return h, nil
}

// parsedCommand is a doc command checked against the command tree.
type parsedCommand struct {
	path        []string          // subcommands, e.g. [plan] or [workers elastic]
	flags       map[string]string // flag name → value ("" for a bool)
	placeholder bool
	argv        []string
}

// parse checks a doc command's subcommands and flags against the tree.
// For a command that is not exact (an example's comment) it stops at the
// first word that is neither a flag, a flag's value, nor a subcommand.
func (c *commandTree) parse(dc docCommand) (*parsedCommand, error) {
	ws, err := shellWords(dc.text)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 || ws[0].s != "allot" {
		return nil, fmt.Errorf("not an allot command")
	}
	p := &parsedCommand{flags: map[string]string{}, placeholder: dc.parseOnly}
	h, err := c.help(nil)
	if err != nil {
		return nil, err
	}
	positional := false
	for i := 1; i < len(ws); i++ {
		w := ws[i]
		s := strings.Trim(w.s, "[]")
		if !w.quoted && (s == "|" || s == "") {
			p.placeholder = true
			continue
		}
		if !w.quoted && strings.HasPrefix(s, "-") && s != "-" {
			name, val, hasVal := strings.Cut(strings.TrimLeft(s, "-"), "=")
			if !strings.HasPrefix(s, "--") {
				long, ok := h.short[name]
				if !ok && name != "h" {
					return nil, fmt.Errorf("allot %s has no flag %s", strings.Join(p.path, " "), s)
				}
				if name == "h" {
					long = "help"
				}
				name = long
			}
			takes, ok := h.flags[name]
			if !ok {
				return nil, fmt.Errorf("allot %s has no flag --%s", strings.Join(p.path, " "), name)
			}
			p.argv = append(p.argv, w.s)
			if takes && !hasVal {
				if i+1 >= len(ws) {
					// The doc names the flag, as in "`allot sim
					// --density` writes ...": a mention, not a command.
					p.placeholder = true
					p.flags[name] = ""
					break
				}
				i++
				val = ws[i].s
				if isPlaceholder(ws[i]) {
					p.placeholder = true
				}
				p.argv = append(p.argv, ws[i].s)
			}
			p.flags[name] = val
			continue
		}
		if !positional && len(h.subs) > 0 {
			alts := strings.Split(s, "|")
			if h.subs[alts[0]] {
				for _, a := range alts {
					if !h.subs[a] {
						return nil, fmt.Errorf("allot %s has no subcommand %q", strings.Join(p.path, " "), a)
					}
				}
				if len(alts) > 1 {
					p.placeholder = true
				}
				p.path = append(p.path, alts[0])
				p.argv = append(p.argv, alts[0])
				if h, err = c.help(p.path); err != nil {
					return nil, err
				}
				continue
			}
		}
		if s == "..." || s == "…" {
			// "and more": flags or arguments the reader chooses.
			p.placeholder = true
			continue
		}
		if !positional && !h.args && !(len(p.path) == 0 && isPlaceholder(w)) {
			// A placeholder in the root's place stands for any command
			// ("allot ARGS --help").
			if !dc.exact {
				break
			}
			if len(h.subs) > 0 {
				return nil, fmt.Errorf("allot %s has no subcommand %q", strings.Join(p.path, " "), s)
			}
			return nil, fmt.Errorf("allot %s takes no argument, but is given %q", strings.Join(p.path, " "), s)
		}
		if !dc.exact && !isPlaceholder(w) && !c.inRepo(w.s) {
			// An example's comment: the command ends before its prose.
			// Its positional words would be ambiguous, so the examples
			// name only flags.
			break
		}
		positional = true
		if isPlaceholder(w) {
			p.placeholder = true
		}
		p.argv = append(p.argv, w.s)
	}
	return p, nil
}

// inRepo says whether a word names a file of the repository: in an
// example's comment, such a word is the command's argument, not prose.
func (c *commandTree) inRepo(w string) bool {
	if c.root == "" || !strings.ContainsAny(w, "/.") {
		return false
	}
	_, err := os.Stat(filepath.Join(c.root, w))
	return err == nil
}

// offlineCommands are the subcommands that run without a server.
var offlineCommands = map[string]bool{"plan": true, "sim": true, "help": true}

// runnable says whether a parsed command is complete and offline, and if
// it is not run because of a rule, why.
func (p *parsedCommand) runnable(root string) (run bool, skip string, err error) {
	if p.placeholder || len(p.argv) == len(p.path) {
		// Placeholders, or only the command's name ("`allot sim`
		// replays ..."): a mention, checked but not run.
		return false, "", nil
	}
	_, help := p.flags["help"]
	_, version := p.flags["version"]
	first := ""
	if len(p.path) > 0 {
		first = p.path[0]
	}
	_, scenario := p.flags["file"]
	if !help && !version && !offlineCommands[first] && !(first == "explain" && scenario) {
		return false, "", nil
	}
	for _, f := range []string{"file", "trace", "azure"} {
		v, ok := p.flags[f]
		if !ok || v == "-" {
			continue
		}
		if _, statErr := os.Stat(filepath.Join(root, v)); statErr != nil {
			if f == "trace" || f == "azure" {
				return false, fmt.Sprintf("the --%s file %s is a download, not in the repository", f, v), nil
			}
			return false, "", fmt.Errorf("its --%s %s is not in the repository", f, v)
		}
	}
	return true, "", nil
}

func TestDocCommandParsing(t *testing.T) {
	doc := "Run `allot plan -f x.yaml` or `allot get JOB -o wide`; `allot workers [drain\\|disable NAME]`.\n\n" +
		"```\n$ allot explain -f s.yaml job-a -o json   # the answer\nOUTPUT\n```\n\n" +
		"<!-- docs-test: skip (needs a host) -->\n```sh\nallot server --listen :1 | tee log\n./allot dev \\\n  --x\n```\n\n" +
		"```sh\nallot list\n```\n"
	nonBare := func(cs []docCommand) (out []docCommand) {
		for _, c := range cs {
			if !c.bare {
				out = append(out, c)
			}
		}
		return out
	}
	got := nonBare(markdownCommands("t.md", doc))
	if bare := markdownCommands("b.md", "Or `submit FILE --set K=V`, `a-b`, `Foo bar`.\n"); len(bare) != 1 || !bare[0].bare || bare[0].text != "allot submit FILE --set K=V" {
		t.Errorf("bare commands %v", bare)
	}
	wrapped := nonBare(markdownCommands("w.md", "A run, `allot plan\n  -f x.yaml`, and ``allot `sim` x`` and `` allot get a ``.\n\n| `allot list` | `x\n| `allot get b` |\n"))
	if fmt.Sprint(wrapped) != fmt.Sprint([]docCommand{
		{"w.md", 1, "allot plan -f x.yaml", true, false, false},
		{"w.md", 2, "allot `sim` x", true, false, false},
		{"w.md", 2, "allot get a", true, false, false},
		{"w.md", 4, "allot list", true, false, false},
		{"w.md", 5, "allot get b", true, false, false},
	}) {
		t.Errorf("wrapped spans %v", wrapped)
	}
	want := []docCommand{
		{"t.md", 1, "allot plan -f x.yaml", true, false, false},
		{"t.md", 1, "allot get JOB -o wide", true, false, false},
		{"t.md", 1, "allot workers [drain|disable NAME]", true, false, false},
		{"t.md", 4, "allot explain -f s.yaml job-a -o json", true, false, false},
		{"t.md", 10, "allot server --listen :1", true, true, false},
		{"t.md", 11, "allot dev  --x", true, true, false},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands\n%v, want\n%v", got, want)
	}
	ex := exampleCommands("e.yaml", "# A.\n#   allot plan -f examples/a.yaml   → green 6\n# allot sim -f examples/a.yaml admits big\nid: x\n")
	if len(ex) != 2 || ex[0].text != "allot plan -f examples/a.yaml" || ex[0].line != 2 || ex[1].text != "allot sim -f examples/a.yaml admits big" {
		t.Errorf("example commands %v", ex)
	}
	ws, err := shellWords(`allot list -o go-template='{{range .jobs}}{{.id}} {{"\n"}}{{end}}' x`)
	if err != nil || len(ws) != 5 || ws[3].s != `go-template={{range .jobs}}{{.id}} {{"\n"}}{{end}}` || !ws[3].quoted {
		t.Errorf("words %v %v", ws, err)
	}
	for _, w := range []string{"FILE", "JOB/TASK", "FILE.json", "ID[", "…", "JOB...", "a|b", "N"} {
		if !isPlaceholder(word{s: w}) {
			t.Errorf("%q is not a placeholder", w)
		}
	}
	for _, w := range []string{"examples/a.yaml", "job-a", "json", "Ab"} {
		if isPlaceholder(word{s: w}) {
			t.Errorf("%q is a placeholder", w)
		}
	}
}

func TestDocCommandTree(t *testing.T) {
	root, _ := filepath.Abs("..")
	tree := &commandTree{bin: bin, root: root, cache: map[string]*cmdHelp{}}
	for _, c := range []struct {
		text  string
		exact bool
		run   bool
	}{
		{"allot plan -f examples/fifo.yaml", true, true},
		{"allot sim -f examples/fifo.yaml --group-by share -o json", true, true},
		{"allot explain -f examples/fifo.yaml a", true, true},
		{"allot explain JOB", true, false},
		{"allot plan", true, false},
		{"allot sim --density", true, false},
		{"allot workers drain|disable|enable NAME", true, false},
		{"allot workers [drain|disable|enable NAME]", true, false},
		{"allot get J -o jsonpath='{.tasks[*].name}'", true, false},
		{"allot worker --help", true, true},
		{"allot ARGS --help", true, false},
		{"allot sim -f examples/fifo.yaml admits big at 5m", false, true},
	} {
		p, err := tree.parse(docCommand{file: "t.md", line: 1, text: c.text, exact: c.exact})
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		if run, _, err := p.runnable(root); run != c.run || err != nil {
			t.Errorf("%s: runnable %v %v, want %v", c.text, run, err, c.run)
		}
	}
	for _, bad := range []string{
		"allot plan --bogus x",
		"allot plan -q",
		"allot nosuch",
		"allot workers drain|bogus NAME",
		"allot submit FILE --wiat",
		"allot get 'x",
	} {
		if _, err := tree.parse(docCommand{file: "t.md", line: 1, text: bad, exact: true}); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	// An example's comment: a file of the repository is an argument, and
	// the flags after it are checked.
	if _, err := tree.parse(docCommand{text: "allot submit examples/fifo.yaml --sett day=1 so that"}); err == nil {
		t.Error("accepted a wrong flag after an example's file argument")
	}
	p, err := tree.parse(docCommand{text: "allot plan -f examples/nosuch.yaml", exact: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.runnable(root); err == nil {
		t.Error("a missing scenario file is accepted")
	}
	p, err = tree.parse(docCommand{text: "allot sim --trace big.swf.gz", exact: true})
	if err != nil {
		t.Fatal(err)
	}
	if run, skip, err := p.runnable(root); run || skip == "" || err != nil {
		t.Errorf("a missing trace: run %v skip %q err %v", run, skip, err)
	}
}

func TestDocsInlineCommands(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []docCommand
	for _, file := range docFiles(t, root) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, markdownCommands(file, string(text))...)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nested, err := filepath.Glob(filepath.Join(root, "examples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples = append(examples, nested...)
	for _, f := range examples {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		cmds = append(cmds, exampleCommands(rel, string(text))...)
	}

	tree := &commandTree{bin: bin, root: root, cache: map[string]*cmdHelp{}}
	// A command written in several places runs once; a failure names
	// every place.
	type run struct {
		argv   []string
		places []string
	}
	runs := map[string]*run{}
	var order []string
	skips := map[string][]string{}
	checked := 0
	rootHelp, err := tree.help(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dc := range cmds {
		if first, _, _ := strings.Cut(strings.TrimPrefix(dc.text, "allot "), " "); dc.bare && !rootHelp.subs[first] {
			continue
		}
		where := fmt.Sprintf("%s:%d", dc.file, dc.line)
		p, err := tree.parse(dc)
		if err != nil {
			t.Errorf("%s: `%s`: %v", where, dc.text, err)
			continue
		}
		checked++
		ok, skip, err := p.runnable(root)
		switch {
		case err != nil:
			t.Errorf("%s: `%s`: %v", where, dc.text, err)
		case skip != "":
			skips[skip] = append(skips[skip], where)
		case ok:
			key := strings.Join(p.argv, "\x00")
			if runs[key] == nil {
				runs[key] = &run{argv: p.argv}
				order = append(order, key)
			}
			runs[key].places = append(runs[key].places, where)
		}
	}
	if checked == 0 {
		t.Fatal("no allot command of the docs outside shell blocks was found")
	}

	dir, _ := newScratchDir(t, root)
	for _, key := range order {
		r := runs[key]
		ctx, cancel := context.WithTimeout(context.Background(), docsCommandTimeout)
		cmd := exec.CommandContext(ctx, bin, r.argv...)
		cmd.Dir = dir
		cmd.Env = docsEnviron()
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			err = fmt.Errorf("ran longer than %s", docsCommandTimeout)
		}
		cancel()
		t.Logf("ran `allot %s` (%s)", strings.Join(r.argv, " "), strings.Join(r.places, ", "))
		if err != nil {
			if len(out) > 3000 {
				out = append([]byte("…"), out[len(out)-3000:]...)
			}
			t.Errorf("%s: `allot %s` failed (%v); output:\n%s", strings.Join(r.places, ", "), strings.Join(r.argv, " "), err, out)
		}
	}
	var reasons []string
	nskip := 0
	for reason, places := range skips {
		nskip += len(places)
		reasons = append(reasons, fmt.Sprintf("%s (%s)", reason, strings.Join(places, ", ")))
	}
	sort.Strings(reasons)
	t.Logf("checked %d allot commands of the docs outside shell blocks against the command tree; ran %d distinct offline ones; skipped %d by rule: %s",
		checked, len(order), nskip, strings.Join(reasons, "; "))
}
