package schema

import (
	"strings"
	"unicode/utf8"
)

// nearMatch returns the candidate that name was most likely meant to be:
// one equal to it ignoring case, '_', '-' and '.' (BASE for base, maxResults
// for max_results), else the closest within a small edit distance, an edit
// being a character added, removed, changed or two neighbours swapped: none
// for names of up to 4 characters (a and b are not near), one for up to 8,
// two for longer ones. Ties go to the earlier candidate; "" when none is
// near. Names over 64 bytes match nothing.
func nearMatch(name string, candidates []string) string {
	const maxLen = 64
	if name == "" || len(name) > maxLen {
		return ""
	}
	folded := foldName(name)
	best, bestDist := "", -1
	for _, c := range candidates {
		if c == name || len(c) > maxLen {
			continue
		}
		fc := foldName(c)
		if fc == folded {
			return c
		}
		limit := 0
		switch n := utf8.RuneCountInString(folded); {
		case n > 8:
			limit = 2
		case n > 4:
			limit = 1
		}
		if limit == 0 {
			continue
		}
		if d := editDistance(folded, fc, limit); d >= 0 && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// foldName lowercases a name and drops the separators '_', '-' and '.'.
func foldName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// editDistance is the edit distance between a and b in runes (optimal
// string alignment: insertions, deletions, substitutions and swaps of two
// neighbours), or -1 when it is over limit.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return -1
	}
	rows := make([][]int, len(ra)+1)
	for i := range rows {
		rows[i] = make([]int, len(rb)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	if d := rows[len(ra)][len(rb)]; d <= limit {
		return d
	}
	return -1
}
