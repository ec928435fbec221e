package control

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/allot-sched/allot/internal/store"
)

// storedIDs is a Bloom filter of the IDs of every job the store may hold.
// A submission must refuse an ID a stored job has (or recognise its own
// retry), and reading the store for it cost each submission a query: on
// SQLite about a quarter of the server's own work for a one-task job, on
// PostgreSQL a round trip. Almost every ID submitted is new, and the filter
// says so from memory; only an ID it may hold (one stored, or one of about
// one in a hundred others) is read from the store.
//
// It holds an ID from before the ID is stored: every batch's jobs are
// added before the batch's commit begins, and at start a goroutine adds
// the IDs the store held (load). Until that load is done the filter answers
// nothing and every submission reads the store, as before.
//
// It grows in layers, each twice the size of the last, so that the chance
// of a needless read stays about the same whatever the history's size;
// deleted jobs stay in (a needless read, never a wrong answer).
type storedIDs struct {
	loaded atomic.Bool

	mu     sync.RWMutex
	seed   maphash.Seed
	layers []*idLayer
}

// idLayer is one fixed-size Bloom filter of up to max IDs.
type idLayer struct {
	bits []uint64
	n    int // IDs added
	max  int
}

const (
	// idBitsPerID and idHashes give about a 1 % false-positive chance per
	// layer (10 bits, 7 hashes).
	idBitsPerID = 10
	idHashes    = 7
	// idFirstLayer is the first layer's capacity; a server of a few
	// thousand jobs keeps about 80 KiB.
	idFirstLayer = 1 << 16
	// idLoadPage is how many stored jobs a read of the start-up load takes.
	idLoadPage = 10000
)

func newStoredIDs() *storedIDs {
	return &storedIDs{seed: maphash.MakeSeed()}
}

// add records ids as possibly stored. An ID the filter already has is not
// added again: a batch carries a job at its creation and again at each
// change, and a layer's capacity counts IDs, not writes.
func (f *storedIDs) add(ids ...string) {
	if len(ids) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		h1, h2 := f.hashes(id)
		if f.has(h1, h2) {
			continue
		}
		l := f.last()
		if l == nil || l.n >= l.max {
			size := idFirstLayer
			if l != nil {
				size = 2 * l.max
			}
			l = &idLayer{bits: make([]uint64, (size*idBitsPerID+63)/64), max: size}
			f.layers = append(f.layers, l)
		}
		for i := range uint64(idHashes) {
			b := (h1 + i*h2) % uint64(len(l.bits)*64)
			l.bits[b/64] |= 1 << (b % 64)
		}
		l.n++
	}
}

func (f *storedIDs) last() *idLayer {
	if len(f.layers) == 0 {
		return nil
	}
	return f.layers[len(f.layers)-1]
}

// mayHold reports whether a job with this ID may be stored: false only
// once the load is done and no layer has the ID.
func (f *storedIDs) mayHold(id string) bool {
	if !f.loaded.Load() {
		return true
	}
	h1, h2 := f.hashes(id)
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.has(h1, h2)
}

// has reports whether any layer has the ID of these hashes; f.mu is held.
func (f *storedIDs) has(h1, h2 uint64) bool {
	for _, l := range f.layers {
		if l.has(h1, h2) {
			return true
		}
	}
	return false
}

func (l *idLayer) has(h1, h2 uint64) bool {
	for i := range uint64(idHashes) {
		b := (h1 + i*h2) % uint64(len(l.bits)*64)
		if l.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// hashes gives the two hashes from which the filter's idHashes positions
// are made (Kirsch and Mitzenmacher's double hashing); the second is odd,
// so the positions differ.
func (f *storedIDs) hashes(id string) (uint64, uint64) {
	h1 := maphash.String(f.seed, id)
	h2 := h1>>32 | h1<<32
	return h1, h2 | 1
}

// load adds the IDs of every job the store holds, a page at a time, then
// lets the filter answer. Jobs committed meanwhile were added by their
// commits. A failed read leaves the filter unloaded: submissions keep
// reading the store.
func (f *storedIDs) load(ctx context.Context, st store.Store) error {
	var after int64
	for {
		jobs, err := st.Jobs(ctx, store.JobFilter{AfterSeq: after, Limit: idLoadPage})
		if err != nil {
			return err
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
			after = j.Seq
		}
		f.add(ids...)
		if len(jobs) < idLoadPage {
			f.loaded.Store(true)
			return nil
		}
	}
}
