package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

func TestSubmissionRefusesInputsOutsideTheAllowListNamingTheField(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "in", "a.tif")
	if err := os.MkdirAll(filepath.Dir(good), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := New(context.Background(), Config{Scheduling: detConfig(1), InputAllow: []string{filepath.Join(dir, "in")},
		Logger: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckJob(endpointJob("img", 1, good, "/etc/hostname"))
	var list model.FieldErrors
	if !errors.As(err, &list) || len(list) != 1 || list[0].Path != "inputs[1]" || !strings.Contains(list[0].Msg, "/etc/hostname") {
		t.Fatalf("CheckJob = %v, want one error naming inputs[1]", err)
	}
	if err := c.CheckJob(endpointJob("img", 1, good)); err != nil {
		t.Errorf("an allowed input: %v", err)
	}
	if _, err := New(context.Background(), Config{Scheduling: detConfig(1), InputAllow: []string{"not/absolute"}}, st); err == nil ||
		!strings.Contains(err.Error(), "server.inputs.allow[0]") {
		t.Errorf("a bad allow entry: %v, want an error naming server.inputs.allow[0]", err)
	}
}

// An input whose name lies under server.inputs.allow but whose file, links
// resolved, lies outside is refused at submission naming the field, as an
// input outside the list is (docs/security.md), not taken and dead-lettered:
// the job never exists. An allowed input that does not exist still goes to
// the dead-letter list, as before.
func TestSubmissionRefusesALinkOutOfTheAllowListNamingTheField(t *testing.T) {
	root := t.TempDir()
	allowed, outside := filepath.Join(root, "allowed"), filepath.Join(root, "outside")
	for _, d := range []string{allowed, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.tif"), []byte("II*\x00 header"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.tif"), filepath.Join(allowed, "escape.tif")); err != nil {
		t.Fatal(err)
	}
	p := newPlaneConfig(t, Config{Scheduling: detConfig(1), InputAllow: []string{allowed}})
	for i, in := range []string{filepath.Join(allowed, "escape.tif"), "file://" + filepath.Join(allowed, "escape.tif")} {
		id := fmt.Sprintf("escape%d", i)
		_, err := p.c.Submit(p.ctx(), endpointJob(id, 1, filepath.Join(allowed, "missing.tif"), in))
		var list model.FieldErrors
		if !errors.As(err, &list) || len(list) != 1 || list[0].Path != "inputs[1]" || !strings.Contains(list[0].Msg, "server.inputs.allow") {
			t.Fatalf("submitting a link out of the allow list: %v, want a refusal naming inputs[1]", err)
		}
		if _, err := p.c.Job(p.ctx(), id); !isNotFound(err) {
			t.Errorf("the refused job %s exists: %v", id, err)
		}
	}
	p.submit(endpointJob("missing", 1, filepath.Join(allowed, "missing.tif")))
	if a := p.job("missing").Admission; a == nil || a.State != api.AdmissionDeadLettered {
		t.Errorf("an allowed input that does not exist: %+v, want the job dead-lettered", a)
	}
}
