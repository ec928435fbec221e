package place

// Filtered is how the registered workers stand against one task shape in
// one scope, filter by filter: the answer to "why is my task pending" in
// full, as explain shows it.
type Filtered struct {
	// Workers counts the registered workers, Removed those each filter
	// removed (a worker is counted under the first filter that removes
	// it) and FitNow those that could take the task now.
	Workers int
	Removed [NumFilters]int
	FitNow  int
	// Why says, for each filter that removed workers, what they lack.
	Why [NumFilters]string
	// PinFits says whether the scope's Pin could take the task now, and
	// OthersFree counts the other workers that could, were the task not
	// pinned.
	PinFits    bool
	OthersFree int
	// Closest, set when no worker can take the task now, is the worker
	// that comes nearest (for a pinned task, its own worker), and Lacks
	// is exactly what it lacks, in chain order.
	Closest *Worker
	Lacks   []Lack
}

// Filter runs shape s down the chain for a task in scope sc. The class
// filters' counts are those placement recorded for the shape (counted per
// class from the feasibility cache); only the worker filters look at each
// worker. It reads only (it may fill the shape's caches).
//
// The closest worker is the one with the fewest things it can never offer
// (labels, hardware), then the fewest it may offer later (a ready state, a
// free slot), then the smallest relative hardware shortfall, then the
// first in registration order.
func (f *Fleet) Filter(s *Shape, sc *Scope) *Filtered {
	m := f.counts(s)
	out := &Filtered{Workers: m.Workers}
	var first [NumFilters]*Worker
	for _, w := range f.workers {
		if w.gone {
			continue
		}
		if !f.feasible(s, w.class) {
			if code := s.short[w.class.idx]; first[code] == nil {
				first[code] = w
			}
			continue
		}
		p := probe{s: s, w: w, sc: sc}
		code, ok := p.notNow()
		if !ok {
			out.FitNow++
			out.PinFits = out.PinFits || w == sc.Pin
			continue
		}
		out.Removed[code]++
		if first[code] == nil {
			first[code] = w
		}
		// Only the pin keeps it from the task.
		if sc.Pin != nil && w != sc.Pin && (code == FilterAssigned || code == FilterBound && w.boundTo == "") && !chain[FilterBusy].now(&p) {
			out.OthersFree++
		}
	}
	for code := range NumFilters {
		if code.Never() {
			out.Removed[code] = m.Removed[code]
		}
		if out.Removed[code] > 0 {
			out.Why[code] = chain[code].why(&probe{s: s, w: first[code], sc: sc})
		}
	}
	if out.FitNow > 0 {
		return out
	}
	out.Closest = sc.Pin
	if out.Closest == nil {
		out.Closest = f.closest(s, sc)
	}
	if out.Closest != nil {
		p := probe{s: s, w: out.Closest, sc: sc, detail: true}
		out.Lacks = p.lacks()
	}
	return out
}

// closest returns the worker nearest to taking a task of shape s, none
// being able to now (see Filter).
func (f *Fleet) closest(s *Shape, sc *Scope) *Worker {
	type never struct {
		hard    int
		deficit float64
		known   bool
	}
	classes := make([]never, len(f.classes))
	var best *Worker
	var bestKey [3]float64
	for _, w := range f.workers {
		if w.gone {
			continue
		}
		p := probe{s: s, w: w, sc: sc}
		cn := &classes[w.class.idx]
		if !cn.known {
			lacks, deficit := p.neverLacks(nil)
			*cn = never{hard: len(lacks), deficit: deficit, known: true}
		}
		p.hard = cn.hard
		soft := 0
		for i := range chain {
			if now := chain[i].now; now != nil && now(&p) {
				soft++
			}
		}
		key := [3]float64{float64(cn.hard), float64(soft), cn.deficit}
		if best == nil || less3(key, bestKey) {
			best, bestKey = w, key
		}
	}
	return best
}

// notNow returns the first worker filter that keeps p.w, whose class
// passes every class filter, from taking the task now.
func (p *probe) notNow() (FilterCode, bool) {
	for i := range chain {
		if now := chain[i].now; now != nil && now(p) {
			return FilterCode(i), true
		}
	}
	return 0, false
}

// neverLacks appends what p.w can never offer, by the class filters, with
// the summed relative hardware shortfall.
func (p *probe) neverLacks(dst []Lack) ([]Lack, float64) {
	deficit := 0.0
	for i := range chain {
		if chain[i].never != nil {
			var d float64
			dst, d = chain[i].lacks(p, dst)
			deficit += d
		}
	}
	return dst, deficit
}

// lacks lists everything p.w lacks for the task, in chain order (the class
// filters come first in the chain).
func (p *probe) lacks() []Lack {
	out, _ := p.neverLacks(nil)
	p.hard = len(out)
	for i := range chain {
		if now := chain[i].now; now != nil && now(p) {
			out, _ = chain[i].lacks(p, out)
		}
	}
	return out
}

func less3(a, b [3]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
