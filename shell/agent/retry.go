package agent

import (
	"fmt"
	"math"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// policy converts a retry table. What it leaves out stays zero, for the
// caller's defaults, and jitter = 0 turns the jitter off. Its errors are
// keyErrors naming the offending key ("retry.backoff").
func (r *Retry) policy() (shell.RetryPolicy, error) {
	p, key, err := r.convert()
	if err != nil {
		return p, keyErrorf("retry."+key, "%v", err)
	}
	if err := p.Validate(); err != nil {
		return p, keyErrorf("retry", "%v", err)
	}
	return p, nil
}

func (r *Retry) convert() (p shell.RetryPolicy, key string, err error) {
	if r.Attempts != nil {
		if *r.Attempts < 1 {
			return p, "attempts", fmt.Errorf("%d is below 1 (the first attempt counts: 1 means no retries)", *r.Attempts)
		}
		p.Attempts = *r.Attempts
	}
	for _, d := range []struct {
		key, text string
		to        *time.Duration
	}{
		{"backoff", r.Backoff, &p.Backoff},
		{"max_backoff", r.MaxBackoff, &p.MaxBackoff},
		{"max_elapsed", r.MaxElapsed, &p.MaxElapsed},
	} {
		if *d.to, err = duration(d.text); err != nil {
			return p, d.key, err
		}
		if d.text != "" && *d.to == 0 {
			return p, d.key, fmt.Errorf("%q is zero (leave the key out for the default)", d.text)
		}
	}
	if p.Backoff > 0 && p.MaxBackoff > 0 && p.MaxBackoff < p.Backoff {
		return p, "max_backoff", fmt.Errorf("%v is shorter than backoff (%v)", p.MaxBackoff, p.Backoff)
	}
	if r.Jitter != nil {
		j := *r.Jitter
		if math.IsNaN(j) || j < 0 || j > 1 {
			return p, "jitter", fmt.Errorf("%v is not between 0 and 1", j)
		}
		p.Jitter = j
		if j == 0 {
			p.Jitter = -1 // none, where 0 would mean the default
		}
	}
	return p, "", nil
}
