package priority_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
)

// BenchmarkCycle measures one scheduling round on 10,000 slots shared by
// 500 jobs, a tenth of the running tasks ending between rounds.
func BenchmarkCycle(b *testing.B) {
	for _, kind := range []string{"priority", "sla"} {
		b.Run(kind, func(b *testing.B) {
			cfg := priorityCfg(priority.Config{})
			if kind == "sla" {
				cfg = slaCfg(sla.Config{Groups: groups("a", 0.2, "b", 0.3, "c", 0.5)})
			}
			g := newGrid(b, 10000, cfg)
			for i := 0; i < 500; i++ {
				g.submit(newJob(fmt.Sprintf("j%03d", i), 2000).prio(1 + i%9).sla([]string{"a", "b", "c"}[i%3]).dur(10 * time.Minute))
			}
			g.cycle()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.advance(g.now.Add(time.Minute))
				g.cycle()
			}
		})
	}
}
