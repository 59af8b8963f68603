package toolsetup

import (
	"fmt"
	"strings"
)

// Diff shows the plan as a person reviews it: per file, the lines removed
// (-) and added (+), with a line of context either side. The client key is
// shown as it will be written: the person asked to see the change.
func (p Plan) Diff() string {
	var b strings.Builder
	for _, c := range p.Changes {
		switch {
		case c.Before == nil:
			fmt.Fprintf(&b, "%s (new file)\n", c.Path)
		case string(c.Before) == string(c.After):
			fmt.Fprintf(&b, "%s (already set up)\n", c.Path)
			continue
		default:
			fmt.Fprintf(&b, "%s\n", c.Path)
		}
		writeHunks(&b, splitLines(c.Before), splitLines(c.After))
	}
	return b.String()
}

// writeHunks prints a longest-common-subsequence line diff; settings files
// are small, so the quadratic table is fine.
func writeHunks(b *strings.Builder, a, c []string) {
	n, m := len(a), len(c)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == c[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == c[j]:
			ops = append(ops, line{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, line{'-', a[i]})
			i++
		default:
			ops = append(ops, line{'+', c[j]})
			j++
		}
	}
	near := func(k int) bool {
		for d := -1; d <= 1; d++ {
			if k+d >= 0 && k+d < len(ops) && ops[k+d].op != ' ' {
				return true
			}
		}
		return false
	}
	gap := false
	for k, l := range ops {
		if l.op == ' ' && !near(k) {
			gap = true
			continue
		}
		if gap {
			b.WriteString("  …\n")
			gap = false
		}
		fmt.Fprintf(b, "%c %s\n", l.op, l.text)
	}
}
