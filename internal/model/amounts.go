package model

// Amounts is a quantity of each resource kind a pool offers, summed over
// tasks or workers: CPU, memory, GPUs and GPU memory. Unlike Resources,
// whose GPU memory is a per-device requirement, Amounts counts GPU memory
// over all devices, so that the GPU memory a pool offers and the GPU memory
// its tasks hold add up like the other kinds. Dominant resource fairness
// (usage: dominant) measures a group by the largest fraction of the pool's
// Amounts it holds.
type Amounts struct {
	MilliCPU    int64
	MemoryMB    int64
	GPUs        int64
	GPUMemoryMB int64 // over all devices
}

// AmountsOf returns what r holds of each kind: its GPU memory counts once
// per GPU (a task asking for 2 GPUs of 40 GiB each holds 80 GiB), and not
// at all without GPUs, as placement ignores it then.
func AmountsOf(r Resources) Amounts {
	a := Amounts{MilliCPU: r.MilliCPU, MemoryMB: r.MemoryMB, GPUs: r.GPUs}
	if r.GPUs > 0 {
		a.GPUMemoryMB = r.GPUs * r.GPUMemoryMB
	}
	return a
}

// Add returns a + o.
func (a Amounts) Add(o Amounts) Amounts {
	return Amounts{a.MilliCPU + o.MilliCPU, a.MemoryMB + o.MemoryMB, a.GPUs + o.GPUs, a.GPUMemoryMB + o.GPUMemoryMB}
}

// Sub returns a − o.
func (a Amounts) Sub(o Amounts) Amounts {
	return Amounts{a.MilliCPU - o.MilliCPU, a.MemoryMB - o.MemoryMB, a.GPUs - o.GPUs, a.GPUMemoryMB - o.GPUMemoryMB}
}

// Times returns a × n.
func (a Amounts) Times(n int64) Amounts {
	return Amounts{a.MilliCPU * n, a.MemoryMB * n, a.GPUs * n, a.GPUMemoryMB * n}
}
