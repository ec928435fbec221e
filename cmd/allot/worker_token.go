package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The worker token. A task must not be able to read it, and a task reads
// what the agent's process shows: its command line (ps, /proc/PID/cmdline,
// readable by every user of the machine) and its environment (/proc/PID/
// environ, readable by its user). So the agent takes its token from a
// file only it may read (--token-file) or from ALLOT_TOKEN, and sheds it
// from both places at start (scrubToken); --token still works, with a
// warning.

// workerTokenFlags are the ways to give the agent its token.
type workerTokenFlags struct {
	flag tokenFlag // --token: visible to every user of the machine
	file string    // --token-file
	// fd is the read end of a pipe holding the token (--token-fd): how
	// the agent passes it to itself when it starts again without it in
	// its environment and arguments.
	fd int
}

// tokenFileModeMask are the permission bits a token file must not have.
const tokenFileModeMask = 0o077

// read returns the token and whether the process still shows it (in
// ALLOT_TOKEN or on its command line) and must shed it. A --token is
// warned about on warn.
func (f *workerTokenFlags) read(warn io.Writer) (token string, shown bool, err error) {
	_, inEnv := os.LookupEnv("ALLOT_TOKEN")
	switch {
	case f.fd > 0:
		tok, err := readTokenFD(f.fd)
		return tok, inEnv, err
	case f.flag.set && f.file != "":
		return "", false, errors.New("--token, --token-file: give one of them")
	case f.flag.set:
		fmt.Fprintln(warn, "warning: --token puts the worker token on the command line, where every user of this machine "+
			"can read it (ps, /proc/PID/cmdline) until the agent has shed it; use --token-file (mode 0600) or ALLOT_TOKEN")
		return f.flag.v, true, nil
	case f.file != "":
		tok, err := readTokenFile(f.file)
		return tok, inEnv, err
	}
	return os.Getenv("ALLOT_TOKEN"), inEnv, nil
}

// readTokenFile reads a token from a file that only its owner may read.
func readTokenFile(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&tokenFileModeMask != 0 {
		return "", fmt.Errorf("--token-file %s: mode %04o lets group or others read it; make it readable by the agent's user only (chmod 600 %s)",
			path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(fh, 4096))
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--token-file %s: the file is empty", path)
	}
	return tok, nil
}

// readTokenFD reads the token the agent passed itself, and closes the
// descriptor: nothing of it is left for a task.
func readTokenFD(fd int) (string, error) {
	fh := os.NewFile(uintptr(fd), "token")
	if fh == nil {
		return "", fmt.Errorf("--token-fd %d: not an open descriptor", fd)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 4096))
	if err != nil {
		return "", fmt.Errorf("--token-fd %d: %w", fd, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// withoutToken returns args without --token and its value.
func withoutToken(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--token":
			i++ // and its value
		case strings.HasPrefix(a, "--token="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// withoutEnv returns env without the variable name.
func withoutEnv(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
