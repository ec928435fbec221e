package control

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
)

// InputChecker is the server's admit.InputChecker: the first stage of seed
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
type InputChecker struct {
	// Timeout bounds one HTTP check; 0 means DefaultInputTimeout.
	Timeout time.Duration
	// Client makes the HTTP checks; nil means http.DefaultClient.
	Client *http.Client
}

// DefaultInputTimeout bounds one HTTP input check: a job's submission waits
// for its checks, so an unresponsive server must not hold it long.
const DefaultInputTimeout = 5 * time.Second

// inputParallelism bounds the checks of one job that run at once.
const inputParallelism = 8

// headerLen is how much of a file the checker reads.
const headerLen = 512

var _ admit.InputChecker = (*InputChecker)(nil)

// defaultInputChecker checks the inputs of every submission and redrive.
var defaultInputChecker admit.InputChecker = &InputChecker{}

// CheckInput implements admit.InputChecker.
func (ic *InputChecker) CheckInput(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "":
		return checkFile(raw)
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("file URL on host %q: only local files (file:///path) can be checked", u.Host)
		}
		if u.Path == "" {
			return errors.New("file URL without a path")
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

func (ic *InputChecker) checkHTTP(ctx context.Context, u *url.URL) error {
	timeout := ic.Timeout
	if timeout <= 0 {
		timeout = DefaultInputTimeout
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
		var ue *url.Error
		if errors.As(err, &ue) && errors.Is(ue.Err, context.DeadlineExceeded) {
			return 0, context.DeadlineExceeded
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, headerLen))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// checkInputs checks a job's inputs, several at a time, and returns why the
// first failing one (in the job's order) is inaccessible, or "" when all
// can be read. It does I/O, so it runs outside the scheduling loop.
func checkInputs(ctx context.Context, ic admit.InputChecker, inputs []string) string {
	if ic == nil || len(inputs) == 0 {
		return ""
	}
	errs := make([]error, len(inputs))
	sem := make(chan struct{}, inputParallelism)
	var wg sync.WaitGroup
	for i, in := range inputs {
		wg.Add(1)
		sem <- struct{}{}
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
