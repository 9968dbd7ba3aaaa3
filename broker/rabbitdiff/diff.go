package rabbitdiff

import (
	"strconv"
	"strings"
)

// UnifiedDiff returns a unified diff (3 lines of context) from text a,
// labelled nameA, to text b, or "" when they are equal.
func UnifiedDiff(nameA, a, nameB, b string) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	ops := diffLines(x, y)
	var sb strings.Builder
	sb.WriteString("--- " + nameA + "\n+++ " + nameB + "\n")
	const context = 3
	for i := 0; i < len(ops); {
		// Find the next change and the hunk around it.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		ax, bx := ops[start].ai, ops[start].bi
		an, bn := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				an++
			}
			if op.kind != '-' {
				bn++
			}
		}
		sb.WriteString("@@ -" + hunkRange(ax, an) + " +" + hunkRange(bx, bn) + " @@\n")
		for _, op := range ops[start:end] {
			sb.WriteByte(op.kind)
			sb.WriteString(op.line)
			sb.WriteByte('\n')
		}
		i = end
	}
	return sb.String()
}

func hunkRange(at, n int) string {
	if n == 0 {
		return strconv.Itoa(at) + ",0"
	}
	return strconv.Itoa(at+1) + "," + strconv.Itoa(n)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffOp is one line of an edit script: ' ' kept, '-' only in a, '+'
// only in b; ai and bi are the line's (or the insertion point's) index in
// a and b.
type diffOp struct {
	kind   byte
	line   string
	ai, bi int
}

// maxDiffCells bounds the LCS table; past it the differing middle is shown
// as all removed then all added, which is still a correct diff.
const maxDiffCells = 4 << 20

// diffLines computes an edit script by longest common subsequence, after
// trimming the common prefix and suffix (transcripts mostly agree).
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		ops = append(ops, diffOp{' ', a[p], p, p})
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(ma), len(mb)
	if n*m > maxDiffCells {
		for i, l := range ma {
			ops = append(ops, diffOp{'-', l, p + i, p})
		}
		for j, l := range mb {
			ops = append(ops, diffOp{'+', l, p + n, p + j})
		}
	} else {
		// lcs[i][j]: the LCS length of ma[i:] and mb[j:].
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) *int32 { return &lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					*at(i, j) = *at(i+1, j+1) + 1
				} else {
					*at(i, j) = max(*at(i+1, j), *at(i, j+1))
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i], p + i, p + j})
				i++
				j++
			case i < n && (j == m || *at(i+1, j) >= *at(i, j+1)):
				ops = append(ops, diffOp{'-', ma[i], p + i, p + j})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j], p + i, p + j})
				j++
			}
		}
	}
	for k := 0; k < s; k++ {
		ops = append(ops, diffOp{' ', a[len(a)-s+k], len(a) - s + k, len(b) - s + k})
	}
	return ops
}
