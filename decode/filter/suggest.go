package filter

import "strings"

// nearest returns the known name closest to name by edit distance, if it
// is close enough to be what the user meant.
func nearest(names []string, name string) string {
	lower := strings.ToLower(name)
	best, bestD := "", len(name)/3+1
	if bestD > 3 {
		bestD = 3
	}
	bestD++ // accept distances up to the bound
	for _, n := range names {
		if n == lower {
			return n
		}
		d := distance(lower, n, bestD)
		if d < bestD && d <= editBudget(lower, n) {
			best, bestD = n, d
		}
	}
	if best != "" {
		return best
	}
	// A name cut short ("amqp.method.arguments.routing") suggests the
	// shortest name it begins.
	for _, n := range names {
		if strings.HasPrefix(n, lower) && (best == "" || len(n) < len(best)) {
			best = n
		}
	}
	return best
}

// distance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and transpositions of adjacent
// bytes), or at least limit when it is limit or more.
func distance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	// Three rows: the one before last, last, current.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			rowMin = min(rowMin, d)
		}
		if rowMin >= limit {
			return limit
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit)
}

// editBudget is how many edits a suggestion may take in the dotted word
// where name and candidate first differ: a third of that word, at least
// one. So "amqp.chanel" suggests amqp.channel, but "amqp.foo" does not
// suggest amqp.doff (two edits in a three-letter word is another word).
func editBudget(name, candidate string) int {
	i := 0
	for i < len(name) && i < len(candidate) && name[i] == candidate[i] {
		i++
	}
	start := strings.LastIndexByte(name[:i], '.') + 1
	end := len(name)
	if j := strings.IndexByte(name[i:], '.'); j >= 0 {
		end = i + j
	}
	return max(1, (end-start)/3)
}
