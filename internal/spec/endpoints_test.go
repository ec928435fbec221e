package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
)

func TestJobLoadFields(t *testing.T) {
	var j Job
	if _, err := Decode([]byte(`
id: img
endpoint: det
image: {width: 30000, height: 15000}
inputs: [s3://bucket/a.ntf]
tasks: [{name: t}]
`), &j); err != nil {
		t.Fatal(err)
	}
	ex, err := j.Expand("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	m := ex.Job
	if m.RegionSize != admit.DefaultRegionSize || m.TileSize != admit.DefaultTileSize || m.TileOverlap != admit.DefaultTileOverlap ||
		m.Image != (model.ImageSize{Width: 30000, Height: 15000}) || len(m.Inputs) != 1 {
		t.Fatalf("job %+v", m)
	}
	if load, src := admit.Estimate(m, admit.Defaults()); load != 32 || src != admit.LoadImage {
		t.Errorf("load %d (%s), want 32 from 8 regions", load, src)
	}
	zero := 0
	j.TileOverlap = &zero
	ex, _ = j.Expand("", time.Time{})
	if ex.Job.TileOverlap != 0 {
		t.Errorf("explicit overlap 0 became %d", ex.Job.TileOverlap)
	}

	bad := []struct {
		job  Job
		want string
	}{
		{Job{Regions: -1}, "regions: must be between 0 and 1000000000"},
		{Job{Image: &ImageSize{Width: 0, Height: 5}}, "image.width: must be between 1 and 1000000000"},
		{Job{Image: &ImageSize{Width: 5, Height: 5}, TileSize: 100, TileOverlap: intp(100)}, "tileOverlap: must be smaller than the tile size 100"},
		{Job{Image: &ImageSize{Width: 5, Height: 5}, TileSize: 2048, RegionSize: 1024}, "tileSize: must not exceed the region size 1024"},
		{Job{Inputs: []string{" "}}, "inputs[0]: must not be empty"},
	}
	for _, tc := range bad {
		tc.job.Tasks = []Task{{Name: "t"}}
		if _, err := tc.job.Expand("jobs[0]", time.Time{}); err == nil || !strings.Contains(err.Error(), "jobs[0]."+tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func intp(n int) *int { return &n }

func TestCheckJobEndpoint(t *testing.T) {
	w := 1.0
	s := Scheduling{Endpoints: []Endpoint{{Name: "det", Type: "http"}, {Name: "ab", Type: "http", Variants: []Variant{{Name: "v1", Weight: &w}, {Name: "v2"}}}}}
	cases := []struct {
		job  model.Job
		want string
	}{
		{model.Job{}, ""},
		{model.Job{Endpoint: "det"}, ""},
		{model.Job{Endpoint: "ab", Variant: "v2"}, ""},
		{model.Job{Endpoint: "nope"}, `jobs[1].endpoint: no endpoint "nope" is defined (known: det, ab)`},
		{model.Job{Endpoint: "ab", Variant: "v3"}, `jobs[1].variant: endpoint "ab" has no variant "v3" (known: v1, v2)`},
		{model.Job{Endpoint: "det", Variant: "v1"}, `jobs[1].variant: endpoint "det" has no variant "v1"`},
		{model.Job{Variant: "v1"}, `jobs[1].variant: a variant needs an endpoint`},
	}
	for _, tc := range cases {
		err := s.CheckJobEndpoint("jobs[1]", tc.job)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.job, err, tc.want)
		}
	}
}
