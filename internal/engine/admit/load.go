package admit

import (
	"github.com/allot-sched/allot/internal/model"
)

// Tiling defaults of the seed's system (OSML ModelRunner): REGION_SIZE
// (10240, 10240), and an image request's tile size (1024, 1024) and tile
// overlap (50, 50); model holds them, as job specs check against them.
const (
	DefaultRegionSize  = model.DefaultRegionSize
	DefaultTileSize    = model.DefaultTileSize
	DefaultTileOverlap = model.DefaultTileOverlap
)

// Load sources, as Estimate reports them.
const (
	LoadExplicit = "explicit" // the job's load field
	LoadRegions  = "regions"  // the job's region count × tile workers
	LoadImage    = "image"    // regions computed from the image size
	LoadDefault  = "default"  // DefaultRegionCount × tile workers
)

// Estimate returns a job's load on its endpoint, in concurrent requests, and
// where the figure came from: the job's explicit load; else its region
// count, or the regions its image is cut into (Regions), times the tile
// workers per instance; else DefaultRegionCount regions.
func Estimate(j model.Job, s Settings) (load int, source string) {
	s = s.resolved()
	switch {
	case j.Load > 0:
		return j.Load, LoadExplicit
	case j.Regions > 0:
		return satMul(j.Regions, s.TileWorkersPerInstance), LoadRegions
	case j.Image.Width > 0 && j.Image.Height > 0:
		r := Regions(j.Image.Width, j.Image.Height, j.RegionSize, j.TileSize, j.TileOverlap)
		return satMul(r, s.TileWorkersPerInstance), LoadImage
	}
	return satMul(DefaultRegionCount, s.TileWorkersPerInstance), LoadDefault
}

// Regions is the number of regions an image of width × height pixels is cut
// into, the way the seed's system tiles it:
//
//	R' = (T − O) × floor((R − O) / (T − O)) + O     region size holding whole tiles
//	n(D) = max(1, ceil((D − O) / (R' − O)))          regions along a side of D pixels
//	regions = n(width) × n(height)
//
// with R the region size, T the tile size and O the tile overlap, which is
// also the overlap between regions. Regions start every R' − O pixels; a
// last strip no wider than the overlap is already covered by its neighbour
// and is not a region. RegionSize and TileSize 0 take the defaults; a
// geometry that cannot tile (T ≤ O, or R < T) uses R as given.
func Regions(width, height, regionSize, tileSize, overlap int) int {
	if regionSize <= 0 {
		regionSize = DefaultRegionSize
	}
	if tileSize <= 0 {
		tileSize = DefaultTileSize
	}
	overlap = max(0, overlap)
	r := regionSize
	if stride := tileSize - overlap; stride > 0 && regionSize >= tileSize {
		r = stride*((regionSize-overlap)/stride) + overlap
	}
	return satMul(axisRegions(width, r, overlap), axisRegions(height, r, overlap))
}

func axisRegions(d, r, overlap int) int {
	stride := r - overlap
	if stride <= 0 {
		stride = max(1, r)
		overlap = 0
	}
	if d <= overlap {
		return 1
	}
	return max(1, (d-overlap+stride-1)/stride)
}
