// Package inputs checks, before a job is taken, that the server can read
// each of its inputs (seed 000's first admission stage) and that they lie
// where server.inputs.allow permits. It does I/O over HTTP and the file
// system, so the scheduling loop never calls it: submission does, first.
package inputs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// Checker is the server's admit.InputChecker: the first stage of seed
// 000 reads each input's header to verify access before the job may take any
// capacity. It understands the inputs a server can reach by itself:
//
//   - file:// URLs and bare paths: the file must exist, be a regular file the
//     server can read, and not be empty; a file whose extension names an
//     image format (TIFF, NITF, PNG, JPEG, JPEG 2000) must start with that
//     format's signature, or it is corrupt;
//   - http:// and https://: a HEAD request (a GET of the first bytes when
//     the server does not allow HEAD) must answer 2xx within Timeout.
//
// Every other scheme (s3://, gs://, ...) is refused as unsupported: the
// server has no credentials for it, so it could not vouch for the input.
type Checker struct {
	// Timeout bounds one HTTP check; 0 means DefaultTimeout.
	Timeout time.Duration
	// Client makes the HTTP checks; nil means http.DefaultClient, with
	// redirects held to Allow.
	Client *http.Client
	// Allow limits the inputs to these prefixes (server.inputs.allow);
	// empty allows every input.
	Allow []spec.InputPrefix
}

// Permitted says why an input may not be checked at all: it lies outside
// every allowed prefix, or it is a relative path while prefixes are set.
// Nil when it may.
func (ic *Checker) Permitted(raw string) error {
	if len(ic.Allow) == 0 {
		return nil
	}
	scheme, host, p := "file", "", raw
	if !strings.HasPrefix(raw, "/") {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("invalid URL: %w", err)
		}
		if u.Scheme == "" {
			return errors.New("a relative path; inputs must be absolute (server.inputs.allow is set)")
		}
		scheme, host, p = strings.ToLower(u.Scheme), u.Host, u.Path
		if scheme == "file" && host == "localhost" {
			host = ""
		}
	}
	for _, a := range ic.Allow {
		if a.Holds(scheme, host, p) {
			return nil
		}
	}
	return errors.New("not under a prefix the server allows (server.inputs.allow)")
}

// permittedFile says why the local file p may not be checked although its
// name lies under an allowed directory: Permitted compares names, but the
// system follows links and resolves ".." after them, so a link inside an
// allowed directory could lead the check anywhere. The file itself, links
// resolved, must lie under an allowed directory (links resolved too).
func (ic *Checker) permittedFile(p string) error {
	if len(ic.Allow) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case err != nil:
		return errors.New("not accessible: its path cannot be resolved")
	}
	for _, a := range ic.Allow {
		if a.Scheme != "file" {
			continue
		}
		if a.Holds("file", "", real) {
			return nil
		}
		if dir, err := filepath.EvalSymlinks(a.Path); err == nil && (spec.InputPrefix{Scheme: "file", Path: dir}).Holds("file", "", real) {
			return nil
		}
	}
	return errLinkOutside
}

// errLinkOutside says that a local input's name lies under an allowed
// directory but its file, links resolved, does not.
var errLinkOutside = errors.New("leads outside the prefixes the server allows through a link (server.inputs.allow)")

// PermittedTarget says why a local input that Permitted lets through may
// still not be read: its file, links resolved, lies outside every allowed
// directory. A submission is refused for it, as for an input outside the
// list, rather than taken and dead-lettered. Nil for URLs, for a file that
// cannot be resolved (it does not exist: the input check dead-letters the
// job), and when every input is allowed.
func (ic *Checker) PermittedTarget(raw string) error {
	if len(ic.Allow) == 0 {
		return nil
	}
	p := raw
	if !strings.HasPrefix(raw, "/") {
		u, err := url.Parse(raw)
		if err != nil || !strings.EqualFold(u.Scheme, "file") || u.Host != "" && u.Host != "localhost" || u.Path == "" {
			return nil
		}
		p = u.Path
	}
	if err := ic.permittedFile(p); errors.Is(err, errLinkOutside) {
		return err
	}
	return nil
}

// New builds the checker of a server whose inputs are limited
// to allow (entries of server.inputs.allow, already checked).
func New(allow []string) (*Checker, error) {
	ic := &Checker{}
	for i, a := range allow {
		p, err := spec.ParseInputPrefix(a)
		if err != nil {
			return nil, model.FieldErrors{{Path: fmt.Sprintf("server.inputs.allow[%d]", i), Msg: err.Error()}}
		}
		ic.Allow = append(ic.Allow, p)
	}
	if len(ic.Allow) > 0 {
		// A redirect must not lead a check where the input could not go.
		ic.Client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if err := ic.Permitted(req.URL.String()); err != nil {
				return fmt.Errorf("redirected to %s: %w", req.URL.Redacted(), err)
			}
			return nil
		}}
	}
	return ic, nil
}

// DefaultTimeout bounds one HTTP input check: a job's submission waits
// for its checks, so an unresponsive server must not hold it long.
const DefaultTimeout = 5 * time.Second

// parallelism bounds the checks of one job that run at once.
const parallelism = 8

// headerLen is how much of a file the checker reads.
const headerLen = 512

var _ admit.InputChecker = (*Checker)(nil)

// CheckInput implements admit.InputChecker.
func (ic *Checker) CheckInput(ctx context.Context, raw string) error {
	if err := ic.Permitted(raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "":
		if err := ic.permittedFile(raw); err != nil {
			return err
		}
		return checkFile(raw)
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("file URL on host %q: only local files (file:///path) can be checked", u.Host)
		}
		if u.Path == "" {
			return errors.New("file URL without a path")
		}
		if err := ic.permittedFile(u.Path); err != nil {
			return err
		}
		return checkFile(u.Path)
	case "http", "https":
		return ic.checkHTTP(ctx, u)
	default:
		return fmt.Errorf("unsupported scheme %q (supported: file, http, https, or a path)", u.Scheme)
	}
}

func checkFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("not accessible: permission denied")
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("is a directory, not a file")
	case !st.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (%s)", st.Mode().Type())
	case st.Size() == 0:
		return errors.New("is empty")
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrPermission) {
		return errors.New("not readable: permission denied")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, headerLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("reading its header: %w", err)
	}
	return checkSignature(filepath.Ext(path), head[:n])
}

// signatures are the first bytes of the image formats the checker knows,
// by file extension.
var signatures = map[string]struct {
	format string
	magic  [][]byte
}{
	".tif":  {"TIFF", [][]byte{[]byte("II*\x00"), []byte("MM\x00*"), []byte("II+\x00"), []byte("MM\x00+")}},
	".tiff": {"TIFF", [][]byte{[]byte("II*\x00"), []byte("MM\x00*"), []byte("II+\x00"), []byte("MM\x00+")}},
	".ntf":  {"NITF", [][]byte{[]byte("NITF"), []byte("NSIF")}},
	".nitf": {"NITF", [][]byte{[]byte("NITF"), []byte("NSIF")}},
	".png":  {"PNG", [][]byte{[]byte("\x89PNG\r\n\x1a\n")}},
	".jpg":  {"JPEG", [][]byte{{0xff, 0xd8, 0xff}}},
	".jpeg": {"JPEG", [][]byte{{0xff, 0xd8, 0xff}}},
	".jp2":  {"JPEG 2000", [][]byte{[]byte("\x00\x00\x00\x0cjP  \r\n\x87\n"), {0xff, 0x4f, 0xff, 0x51}}},
}

// checkSignature reports a header that does not start with the signature
// its extension promises. Files of other extensions pass.
func checkSignature(ext string, head []byte) error {
	sig, ok := signatures[strings.ToLower(ext)]
	if !ok {
		return nil
	}
	for _, m := range sig.magic {
		if bytes.HasPrefix(head, m) {
			return nil
		}
	}
	return fmt.Errorf("corrupt: not a %s file (header starts %q)", sig.format, head[:min(len(head), 8)])
}

func (ic *Checker) checkHTTP(ctx context.Context, u *url.URL) error {
	timeout := ic.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	hc := ic.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, err := probe(ctx, hc, http.MethodHead, u)
	if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
		status, err = probe(ctx, hc, http.MethodGet, u)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", timeout)
	case err != nil:
		return fmt.Errorf("unreachable: %w", err)
	case status < 200 || status > 299:
		return fmt.Errorf("HTTP %d %s", status, http.StatusText(status))
	}
	return nil
}

// probe sends a HEAD, or a GET of the first bytes, and returns the status.
func probe(ctx context.Context, hc *http.Client, method string, u *url.URL) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return 0, err
	}
	if method == http.MethodGet {
		req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", headerLen-1))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err // a *url.Error; errors.Is finds a deadline through it
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, headerLen))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Problem checks a job's inputs, several at a time, and returns why the
// first failing one (in the job's order) is inaccessible, or "" when all
// can be read (or ctx ended first). It does I/O, so it runs outside the
// scheduling loop.
func Problem(ctx context.Context, ic admit.InputChecker, inputs []string) string {
	if ic == nil || len(inputs) == 0 {
		return ""
	}
	errs := make([]error, len(inputs))
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i, in := range inputs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			// The caller is gone (inputsProblem reports ctx's error):
			// start no more checks.
			wg.Wait()
			return ""
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = ic.CheckInput(ctx, in)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Sprintf("input %q: %v", inputs[i], err)
		}
	}
	return ""
}
