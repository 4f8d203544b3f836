package provider

import "strings"

// Table is a list of providers, in the order messages name them.
type Table []Entry

// Lookup returns the entry named name.
func (t Table) Lookup(name string) (Entry, bool) {
	for _, e := range t {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Names are the entries' names, in table order.
func (t Table) Names() []string {
	names := make([]string, len(t))
	for i, e := range t {
		names[i] = e.Name
	}
	return names
}

// Takers are the entries that take key (Entry.Takes).
func (t Table) Takers(key string) Table {
	var out Table
	for _, e := range t {
		if e.Takes(key) {
			out = append(out, e)
		}
	}
	return out
}

// Refusal words why provider e refuses key, which some other entries take:
// "applies to provider anthropic only", or, for a key every HTTP provider
// and only they take, "applies to the HTTP providers (openai, anthropic),
// not script". It is "" when e takes key or no entry does.
func (t Table) Refusal(e Entry, key string) string {
	takers := t.Takers(key)
	if e.Takes(key) || len(takers) == 0 {
		return ""
	}
	var http Table
	for _, x := range t {
		if x.HTTP {
			http = append(http, x)
		}
	}
	names := strings.Join(takers.Names(), ", ")
	switch {
	case len(takers) > 1 && strings.Join(http.Names(), ", ") == names:
		return "applies to the HTTP providers (" + names + "), not " + e.Name
	case len(takers) == 1:
		return "applies to provider " + names + " only"
	}
	return "applies to providers " + names + " only"
}
