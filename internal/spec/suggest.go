package spec

import "strings"

// closestName returns the name of known that key most likely misspells, or
// "" when none is close: a "did you mean" for an unknown field. Close is an
// edit distance (insertions, deletions, substitutions and swaps of two
// neighbours, case ignored) of at most 1 for a key of up to four letters
// and 2 for a longer one; of names equally close, the one sharing the
// longest start with key wins, then the first in known.
func closestName(key string, known []string) string {
	limit := 1
	if len(key) > 4 {
		limit = 2
	}
	lk := strings.ToLower(key)
	best, bestD, bestP := "", limit+1, -1
	for _, name := range known {
		ln := strings.ToLower(name)
		d := editDistance(lk, ln)
		if d >= len(key) {
			continue // nothing of key is left: no likelier than any other
		}
		if p := commonPrefix(lk, ln); d < bestD || d == bestD && p > bestP {
			best, bestD, bestP = name, d, p
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b
// (bytes): Levenshtein's edits plus the swap of two neighbours, the
// commonest typo.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// names lists the fields' names, in declaration order.
func (fs shapeFields) names() []string {
	out := make([]string, len(fs.list))
	for i, f := range fs.list {
		out[i] = f.name
	}
	return out
}
