package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/model"
)

// Throttling is the `throttling:` block (model.ThrottlingSpec);
// config.ThrottlingSettings resolves it against the seed's defaults.
type Throttling = model.ThrottlingSpec

// Endpoint is an entry of the `endpoints:` block (model.EndpointSpec); its
// Model method converts it to the engine's endpoint.
type Endpoint = model.EndpointSpec

// Variant is a production variant of an endpoint (model.VariantSpec).
type Variant = model.VariantSpec

// CheckJobEndpoint reports a job that names an endpoint or variant the
// configuration does not define; path prefixes the field ("jobs[3]"). The
// engine refuses such a job too; this check names the field and line of a
// document.
func (s Scheduling) CheckJobEndpoint(path string, j model.Job) error {
	var c errs
	p := func(f string) string { return join(path, f) }
	switch {
	case j.Endpoint == "" && j.Variant != "":
		c.add(p("variant"), "a variant needs an endpoint")
	case j.Endpoint != "":
		var ep *Endpoint
		for i := range s.Endpoints {
			if s.Endpoints[i].Name == j.Endpoint {
				ep = &s.Endpoints[i]
			}
		}
		if ep == nil {
			c.add(p("endpoint"), "no endpoint %q is defined%s", j.Endpoint, known(len(s.Endpoints), func(i int) string { return s.Endpoints[i].Name }))
			break
		}
		if j.Variant == "" {
			break
		}
		for _, v := range ep.Variants {
			if v.Name == j.Variant {
				return nil
			}
		}
		c.add(p("variant"), "endpoint %q has no variant %q%s", j.Endpoint, j.Variant, known(len(ep.Variants), func(i int) string { return ep.Variants[i].Name }))
	}
	return c.err()
}

func known(n int, name func(int) string) string {
	if n == 0 {
		return ""
	}
	names := make([]string, n)
	for i := range names {
		names[i] = name(i)
	}
	return " (known: " + strings.Join(names, ", ") + ")"
}

// Environment variables of the seed that ApplyEnv reads, and Allot's own
// SCHEDULER_STARVATION_WAIT.
const (
	EnvThrottlingEnabled              = "SCHEDULER_THROTTLING_ENABLED"
	EnvCapacityTargetPercentage       = "CAPACITY_TARGET_PERCENTAGE"
	EnvDefaultInstanceConcurrency     = "DEFAULT_INSTANCE_CONCURRENCY"
	EnvDefaultHTTPEndpointConcurrency = "DEFAULT_HTTP_ENDPOINT_CONCURRENCY"
	EnvTileWorkersPerInstance         = "TILE_WORKERS_PER_INSTANCE"
	EnvStarvationWait                 = "SCHEDULER_STARVATION_WAIT"
)

// ApplyEnv overlays the environment variables of seed 000 (throttling) and
// seed 002 (placement, elastic coordinator) onto s: a variable that is set
// wins over the configuration file, as in the seeds, where these variables
// are the configuration. lookup is os.LookupEnv in the server.
// Every bad value is reported, naming its variable.
func (s *Scheduling) ApplyEnv(lookup func(string) (string, bool)) error {
	var c errs
	get := func(name string) (string, bool) {
		v, ok := lookup(name)
		return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
	}
	t := &s.Throttling
	if v, ok := get(EnvThrottlingEnabled); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.add(EnvThrottlingEnabled, "%q is not true or false", v)
		} else {
			t.ThrottlingEnabled = &b
		}
	}
	if v, ok := get(EnvCapacityTargetPercentage); ok {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || math.IsNaN(f):
			c.add(EnvCapacityTargetPercentage, "%q is not a number", v)
		case f < 0 || f > model.MaxCapacityTargetPercentage:
			c.add(EnvCapacityTargetPercentage, "must be between 0.0 and %.1f (got %s)", model.MaxCapacityTargetPercentage, v)
		default:
			t.CapacityTargetPercentage = &f
		}
	}
	for _, iv := range []struct {
		name string
		dst  *int
	}{
		{EnvDefaultInstanceConcurrency, &t.DefaultInstanceConcurrency},
		{EnvDefaultHTTPEndpointConcurrency, &t.DefaultHTTPEndpointConcurrency},
		{EnvTileWorkersPerInstance, &t.TileWorkersPerInstance},
	} {
		if v, ok := get(iv.name); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				c.add(iv.name, "%q is not a whole number of at least 1", v)
				continue
			}
			*iv.dst = n
		}
	}
	if v, ok := get(EnvStarvationWait); ok {
		d, err := ParseDuration(v)
		if err != nil || d < 0 {
			c.add(EnvStarvationWait, "%q is not a duration (like 5m, or 0 to disable)", v)
		} else {
			t.StarvationWait = &d
		}
	}
	applyPlacementEnv(&c, get, &s.Placement)
	return c.err()
}

// checkImage checks the fields that estimate a job's load and its inputs.
func checkImage(c *errs, p func(string) string, j Job) {
	between := func(field string, v, lo int) {
		if v < lo || v > model.MaxLoad {
			c.add(p(field), "must be between %d and %d (got %d)", lo, model.MaxLoad, v)
		}
	}
	between("regions", j.Regions, 0)
	if j.Image != nil {
		between("image.width", j.Image.Width, 1)
		between("image.height", j.Image.Height, 1)
	}
	between("regionSize", j.RegionSize, 0)
	between("tileSize", j.TileSize, 0)
	r, ts, o := j.geometry()
	switch {
	case o < 0:
		c.add(p("tileOverlap"), "must not be negative")
	case o >= ts:
		c.add(p("tileOverlap"), "must be smaller than the tile size %d", ts)
	case ts > r:
		c.add(p("tileSize"), "must not exceed the region size %d", r)
	}
	for i, in := range j.Inputs {
		if strings.TrimSpace(in) == "" {
			c.add(p(fmt.Sprintf("inputs[%d]", i)), "must not be empty")
		}
	}
	if len(j.Inputs) > MaxInputs {
		c.add(p("inputs"), "has %d entries, more than %d", len(j.Inputs), MaxInputs)
	}
}

// MaxInputs bounds the inputs one job declares.
const MaxInputs = 1_000

// geometry returns the job's region size, tile size and tile overlap with
// the defaults of the seed's system filled in.
func (j Job) geometry() (region, tile, overlap int) {
	region, tile, overlap = j.RegionSize, j.TileSize, model.DefaultTileOverlap
	if region == 0 {
		region = model.DefaultRegionSize
	}
	if tile == 0 {
		tile = model.DefaultTileSize
	}
	if j.TileOverlap != nil {
		overlap = *j.TileOverlap
	}
	return region, tile, overlap
}
