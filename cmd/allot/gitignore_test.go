package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// The server's default data directory holds a database and an admin
// token: started in a checkout, it must not show up as something to commit.
func TestTheDefaultDataDirectoryIsIgnoredByGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	server, _, err := newRoot().Find([]string{"server"})
	if err != nil {
		t.Fatal(err)
	}
	dir := server.Flags().Lookup("data-dir").DefValue
	for _, p := range []string{filepath.Join(dir, "allot.db"), filepath.Join("docs", dir, "admin.token")} {
		cmd := exec.Command(git, "check-ignore", "--no-index", "-q", p)
		cmd.Dir = "../.."
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			t.Errorf("%s is not ignored: .gitignore lacks %s/", p, dir)
		} else if err != nil {
			t.Skipf("git check-ignore: %v", err)
		}
	}
}
