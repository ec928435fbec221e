package policy

import "sort"

// WaterFill writes into alloc the weighted max-min fair allocation of
// capacity among groups with demand[i] and weight[i]: capacity is shared
// in proportion to weight, no group gets more than its demand, and what a
// capped group leaves is shared again among the others. Groups of weight 0
// share, equally, only what the weighted groups leave. order is scratch of
// any length; it returns it for reuse. The simulator measures runs against
// it, and fairshare's preemption stops tasks toward it.
func WaterFill(capacity float64, demand, weight, alloc []float64, order []int) []int {
	for i := range alloc {
		alloc[i] = 0
	}
	left := capacity
	for pass := 0; pass < 2 && left > 0; pass++ {
		order = order[:0]
		var sumW float64
		for i, d := range demand {
			if d <= 0 || (pass == 0) != (weight[i] > 0) {
				continue
			}
			order = append(order, i)
			sumW += passWeight(weight[i], pass)
		}
		// Cap the groups in order of demand per weight: the first whose
		// demand exceeds its part of what is left, and all after it, get
		// their part.
		sort.Slice(order, func(a, b int) bool {
			ia, ib := order[a], order[b]
			ra, rb := demand[ia]/passWeight(weight[ia], pass), demand[ib]/passWeight(weight[ib], pass)
			if ra != rb {
				return ra < rb
			}
			return ia < ib
		})
		for k, i := range order {
			w := passWeight(weight[i], pass)
			if demand[i]*sumW <= left*w {
				alloc[i] = demand[i]
				left -= demand[i]
				sumW -= w
				continue
			}
			level := left / sumW
			for _, j := range order[k:] {
				alloc[j] = level * passWeight(weight[j], pass)
			}
			left = 0
			break
		}
	}
	return order
}

func passWeight(w float64, pass int) float64 {
	if pass == 1 {
		return 1
	}
	return w
}
