package place

import (
	"math"
	"slices"
)

// The adaptive score of seed 002 is
//
//	s(v, w) = λ(v)·μ̂(w) − (1 − λ(v))·ĉ(w) + jitter·h(v, w)
//
// where v is the task and w the worker:
//
//   - μ̂, the throughput proxy, is a weighted sum of the worker's hardware,
//     each dimension divided by the largest value any registered worker
//     has: 0.4·GPUs + 0.2·memory per GPU + 0.2·memory + 0.2·CPU cores. It
//     lies in [0, 1]; a dimension no worker has contributes 0.
//   - ĉ, the cost proxy, is the worker's cost per hour divided by the
//     largest cost of any registered worker, in [0, 1] (0 when every
//     worker is free). The configuration layer gives a worker that reports
//     no cost the seed's default of 1 per hour.
//   - λ is the task category's weight: inference 0.4, training 0.8, other
//     0.5 by default. A high λ buys throughput (training wants big GPUs), a
//     low λ saves cost (inference takes cheaper workers).
//   - h ∈ [0, 1) is a hash of the task's identity (job and task name) and
//     the worker's name, so the same task and fleet always give the same
//     choice while different tasks spread over identical workers.
//
// Workers of one class have the same hardware and cost, so everything but
// the jitter term is computed once per class; "registered" includes
// draining and disabled workers, so that switching workers off and on does
// not move every score.

// Weights of μ̂'s dimensions; they sum to 1.
const (
	weightGPUs      = 0.4
	weightGPUMemory = 0.2
	weightMemory    = 0.2
	weightCPU       = 0.2
)

// bestWindow is how many free workers of one class the best strategy scores
// for one task: the walk starts at a position the task's hash picks and
// takes the next free workers in registration order, wrapping around. With
// at most this many free workers in a class the choice is exact.
const bestWindow = 8

// normalise recomputes μ̂, ĉ and the base scores of every class, and the
// class order per category, after workers came or went.
func (f *Fleet) normalise() {
	f.normDirty = false
	var maxGPU, maxGPUMem, maxMem, maxCPU, maxCost float64
	for _, c := range f.classes {
		if c.workers == 0 {
			continue
		}
		maxGPU = math.Max(maxGPU, float64(c.capacity.GPUs))
		maxGPUMem = math.Max(maxGPUMem, float64(c.capacity.GPUMemoryMB))
		maxMem = math.Max(maxMem, float64(c.capacity.MemoryMB))
		maxCPU = math.Max(maxCPU, float64(c.capacity.MilliCPU))
		maxCost = math.Max(maxCost, c.cost)
	}
	for _, c := range f.classes {
		c.mu = weightGPUs*frac(float64(c.capacity.GPUs), maxGPU) + weightGPUMemory*frac(float64(c.capacity.GPUMemoryMB), maxGPUMem) +
			weightMemory*frac(float64(c.capacity.MemoryMB), maxMem) + weightCPU*frac(float64(c.capacity.MilliCPU), maxCPU)
		c.costN = frac(c.cost, maxCost)
		for k, l := range f.cfg.lambda {
			c.base[k] = l*c.mu - (1-l)*c.costN
		}
	}
	for k := range f.order {
		o := append(f.order[k][:0], f.classes...)
		slices.SortStableFunc(o, func(a, b *class) int {
			switch {
			case a.base[k] > b.base[k]:
				return -1
			case a.base[k] < b.base[k]:
				return 1
			}
			return a.idx - b.idx
		})
		f.order[k] = o
	}
}

// frac is v/max, or 0 when max is 0 (no worker has the dimension).
func frac(v, max float64) float64 {
	if max <= 0 {
		return 0
	}
	return v / max
}

// hashString is FNV-1a over s, continuing from h (0 starts afresh).
func hashString(s string, h uint64) uint64 {
	if h == 0 {
		h = 14695981039346656037
	}
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// TaskHash is the task's half of the jitter hash: its job and name.
func TaskHash(job, task string) uint64 {
	return hashString(task, hashString("\x00", hashString(job, 0)))
}

// mix is the splitmix64 finaliser: it spreads every input bit over the
// output, so nearby hashes give unrelated jitter.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unit maps a hash to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// jitterOf is h(task, worker) ∈ [0, 1) for a worker whose name hashes to
// worker.
func jitterOf(task, worker uint64) float64 { return unit(mix(task ^ worker)) }

// score is s(task, w) for category slot k.
func (f *Fleet) score(k int, task uint64, w *Worker) float64 {
	return w.class.base[k] + f.cfg.jitter*jitterOf(task, w.hash)
}

// Score returns the score a task of category slot k with hash task would
// give w: for reports and tests.
func (f *Fleet) Score(k int, task uint64, w *Worker) float64 {
	if f.normDirty {
		f.normalise()
	}
	return f.score(k, task, w)
}
