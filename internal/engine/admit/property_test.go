package admit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// refJob and refModel are a deliberately naive admission: every waiting job
// is evaluated on every pass, in age order per variant, with no shortcuts.
// Pass must decide the same.
type refJob struct {
	id, pool    string
	load        int
	seq         uint64
	admitted    bool
	throttledAt time.Time
	throttled   bool
}

type refModel struct {
	target   map[string]int
	load     map[string]int
	running  map[string]int
	reserved map[string]*refJob
	jobs     []*refJob // by seq
	wait     time.Duration
}

func (m *refModel) pass(now time.Time) (admitted, throttled []string) {
	for _, j := range m.jobs {
		if j.admitted {
			continue
		}
		p := j.pool
		throttle := func() {
			if !j.throttled {
				j.throttled, j.throttledAt = true, now
				throttled = append(throttled, j.id)
			}
		}
		switch {
		case m.reserved[p] != nil && m.reserved[p] != j:
			throttle()
		case j.load <= m.target[p]-m.load[p] || m.running[p] == 0:
			j.admitted = true
			m.load[p] += j.load
			m.running[p]++
			if m.reserved[p] == j {
				m.reserved[p] = nil
			}
			admitted = append(admitted, j.id)
		default:
			throttle()
			if m.wait > 0 && m.reserved[p] == nil && m.oldest(p) == j && now.Sub(j.throttledAt) >= m.wait {
				m.reserved[p] = j
			}
		}
	}
	return admitted, throttled
}

func (m *refModel) oldest(pool string) *refJob {
	for _, j := range m.jobs {
		if !j.admitted && j.pool == pool {
			return j
		}
	}
	return nil
}

func (m *refModel) release(id string) {
	i := slices.IndexFunc(m.jobs, func(j *refJob) bool { return j.id == id })
	j := m.jobs[i]
	if j.admitted {
		m.load[j.pool] -= j.load
		m.running[j.pool]--
	}
	if m.reserved[j.pool] == j {
		m.reserved[j.pool] = nil
	}
	m.jobs = slices.Delete(m.jobs, i, i+1)
}

func TestPassDecidesLikeANaiveEvaluationOfEveryJob(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		eps := []model.Endpoint{
			{Name: "a", Type: model.EndpointInstanceBacked, Instances: 1 + rng.IntN(6), InstanceConcurrency: 2},
			{Name: "b", Type: model.EndpointHTTP, Variants: []model.Variant{{Name: "v1", Weight: 1, MaxConcurrency: 1 + rng.IntN(8)}, {Name: "v2", Weight: 1}}},
		}
		s := Defaults()
		s.StarvationWait = time.Duration(rng.IntN(3)) * time.Minute
		c, err := New(Config{Settings: s, Endpoints: eps}, seed)
		if err != nil {
			t.Fatal(err)
		}
		m := &refModel{target: map[string]int{}, load: map[string]int{}, running: map[string]int{}, reserved: map[string]*refJob{}, wait: s.StarvationWait}
		for _, ep := range eps {
			for _, v := range Variants(ep) {
				m.target[ep.Name+"/"+v.Name] = MaxCapacity(ep, v, s)
			}
		}
		now := t0
		var live []string
		for step := range 120 {
			now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
			switch op := rng.IntN(10); {
			case op < 5:
				id := fmt.Sprint("j", step)
				ep := []string{"a", "b"}[rng.IntN(2)]
				r := c.Enqueue(model.Job{ID: id, Endpoint: ep, Load: 1 + rng.IntN(7)}, uint64(step+1), now)
				m.jobs = append(m.jobs, &refJob{id: id, pool: ep + "/" + r.Variant, load: r.Load, seq: uint64(step + 1)})
				live = append(live, id)
			case op < 8:
				a, th := c.Pass(now)
				ra, rth := m.pass(now)
				if got, want := fmt.Sprint(sorted(ids(a))), fmt.Sprint(sorted(ra)); got != want {
					t.Fatalf("seed %d step %d: admitted %s, naive %s", seed, step, got, want)
				}
				if got, want := fmt.Sprint(sorted(ids(th))), fmt.Sprint(sorted(rth)); got != want {
					t.Fatalf("seed %d step %d: newly throttled %s, naive %s", seed, step, got, want)
				}
			case len(live) > 0:
				k := rng.IntN(len(live))
				c.Release(live[k])
				m.release(live[k])
				live = slices.Delete(live, k, k+1)
			}
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
