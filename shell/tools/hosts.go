package tools

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// hostRule is one entry of an allow-list: an exact host or a "*." suffix,
// with an optional port.
type hostRule struct {
	host     string // lower case, no brackets; without the "*." of a wildcard
	wildcard bool   // "*.example.com": any subdomain, not example.com itself
	port     string // empty: any port
}

// parseHostRule parses "example.com", "*.example.com", "example.com:8080",
// "127.0.0.1", "[::1]:8080".
func parseHostRule(s string) (hostRule, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	r := hostRule{host: s}
	if h, p, err := net.SplitHostPort(s); err == nil {
		r.host, r.port = h, p
	}
	r.host = strings.TrimSuffix(strings.TrimPrefix(r.host, "["), "]")
	if rest, ok := strings.CutPrefix(r.host, "*."); ok {
		r.host, r.wildcard = rest, true
	}
	switch {
	case r.host == "" || strings.ContainsAny(r.host, "*/@ ?#"):
		return hostRule{}, fmt.Errorf("allowed host %q: want a host like example.com, *.example.com or example.com:8080", s)
	case r.port != "" && !allDigits(r.port):
		return hostRule{}, fmt.Errorf("allowed host %q: the port is not a number", s)
	}
	return r, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// matches reports whether the host and port of u fit the rule. The port
// compared is the URL's port or its scheme's default.
func (r hostRule) matches(u *url.URL) bool {
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if r.port != "" && r.port != effectivePort(u) {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(host, "."+r.host)
	}
	return host == r.host
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// hostList is a parsed allow-list; empty allows nothing.
type hostList []hostRule

func parseHostList(entries []string) (hostList, error) {
	var l hostList
	for _, e := range entries {
		r, err := parseHostRule(e)
		if err != nil {
			return nil, err
		}
		l = append(l, r)
	}
	return l, nil
}

// check returns nil when u may be fetched: http or https, with a host on
// the list.
func (l hostList) check(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("the URL %q has no host", u.Redacted())
	}
	for _, r := range l {
		if r.matches(u) {
			return nil
		}
	}
	return fmt.Errorf("host %q is not on the allow-list", u.Host)
}
