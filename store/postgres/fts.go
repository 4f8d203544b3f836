package postgres

import (
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Full-text tokens. PostgreSQL's parsers split and fold words by the
// server's locale; this store tokenizes in Go instead, the same way on
// every server, close to SQLite FTS4's unicode61 tokenizer (which the
// SQLite store uses): a word is a run of letters, numbers and marks;
// case is folded; diacritics are removed from Latin letters ("Café" and
// "cafe" are one word). The words go to PostgreSQL as tsvector and tsquery
// literals, which it stores and matches without parsing them again.

// maxLexeme is the longest word indexed, in bytes (PostgreSQL refuses
// longer lexemes; its own parser skips them too).
const maxLexeme = 2046

// maxPositions bounds the positions stored per word and field, as
// PostgreSQL does (a tsvector keeps at most 256); maxPosition is the
// largest position it stores.
const (
	maxPositions = 256
	maxPosition  = 16383
)

// isWordRune reports whether r belongs in a word.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// ftsWords splits text into folded words, in order.
func ftsWords(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) }) {
		if f := foldWord(w); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// foldWord folds a word's case and removes the diacritics of its Latin
// letters (and combining marks that follow a Latin letter).
func foldWord(w string) string {
	var b strings.Builder
	latin := false
	for _, r := range norm.NFD.String(w) {
		switch {
		case unicode.Is(unicode.Mn, r) && latin:
			continue // a diacritic of a Latin letter
		default:
			latin = unicode.Is(unicode.Latin, r)
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return norm.NFC.String(b.String())
}

// tsvector is the tsvector literal of words (in order, positions from 1)
// and how many words were counted (the field's length, for BM25).
func tsvector(words []string) string {
	pos := map[string][]int{}
	var order []string
	for i, w := range words {
		if len(w) > maxLexeme {
			continue
		}
		p, seen := pos[w]
		if !seen {
			order = append(order, w)
		}
		if len(p) < maxPositions && (len(p) == 0 || p[len(p)-1] < maxPosition) {
			pos[w] = append(p, min(i+1, maxPosition))
		}
	}
	var b strings.Builder
	for i, w := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(w))
		for j, p := range pos[w] {
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	return b.String()
}

// quoteLexeme quotes a word for a tsvector or tsquery literal.
func quoteLexeme(w string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(w) + "'"
}
