package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// program makes an executable file named name in dir.
func program(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestACommandIsLookedUpOnThePathAgainWhenItsProgramGoesOrItsTimeIsUp(t *testing.T) {
	early, late := t.TempDir(), t.TempDir()
	t.Setenv("PATH", early+string(os.PathListSeparator)+late)
	clock := time.Unix(1000, 0)
	c := &pathCache{entries: map[string]pathEntry{}, now: func() time.Time { return clock }}
	inLate := program(t, late, "prog")
	for _, step := range []struct {
		name string
		do   func()
		want string
	}{
		{"found", func() {}, inLate},
		{"a program installed earlier on the PATH is not seen at once", func() { program(t, early, "prog") }, inLate},
		{"but once the time is up", func() { clock = clock.Add(pathTTL) }, filepath.Join(early, "prog")},
		{"a program removed is looked up again", func() { os.Remove(filepath.Join(early, "prog")) }, inLate},
		{"and a new PATH too", func() { t.Setenv("PATH", early) }, ""},
	} {
		step.do()
		got, ok := c.lookPath("prog")
		if got != step.want || ok != (step.want != "") {
			t.Errorf("%s: lookPath = %q, %v; want %q", step.name, got, ok, step.want)
		}
	}
	for _, name := range []string{"./prog", "/bin/sh", ""} {
		if got, ok := c.lookPath(name); ok {
			t.Errorf("lookPath(%q) = %q, want no lookup", name, got)
		}
	}
}

func TestACommandLookedUpKeepsItsNameAsArgumentZero(t *testing.T) {
	cmd, err := command(api.Assignment{Command: []string{"sh", "-c", "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(cmd.Path) || cmd.Args[0] != "sh" || cmd.Err != nil {
		t.Errorf("Path %q, Args %q, Err %v: want the path found and argument 0 as given", cmd.Path, cmd.Args, cmd.Err)
	}
}
