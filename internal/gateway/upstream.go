package gateway

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Upstream is one service the gateway forwards to.
type Upstream struct {
	// Name is the NAME of /gw/NAME/: letters, digits, '.', '_' and '-'.
	Name string
	// URL is the base the rest of the path is appended to. User
	// information in it (https://user:pass@host) is sent as Basic
	// authentication and never logged.
	URL *url.URL
	// Timeout bounds each call to the upstream; zero is the gateway's
	// Config.Timeout.
	Timeout time.Duration
}

// ParseUpstream reads "NAME=URL", the form of --upstream.
func ParseUpstream(s string) (Upstream, error) {
	name, raw, ok := strings.Cut(s, "=")
	if !ok {
		return Upstream{}, fmt.Errorf("upstream %q: want NAME=URL", s)
	}
	name, raw = strings.TrimSpace(name), strings.TrimSpace(raw)
	if err := checkUpstreamName(name); err != nil {
		return Upstream{}, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Upstream{}, fmt.Errorf("upstream %q: the URL must be http:// or https:// with a host", name)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Upstream{}, fmt.Errorf("upstream %q: the URL must not carry a query or a fragment", name)
	}
	return Upstream{Name: name, URL: u}, nil
}

func checkUpstreamName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("upstream name %q: want 1 to 64 characters", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("upstream name %q: only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// ParseUpstreams reads NAME=URL items separated by commas (the form of
// JOBD_UPSTREAMS), with timeouts from ParseTimeouts applied.
func ParseUpstreams(items []string, timeouts []string) ([]Upstream, error) {
	var ups []Upstream
	for _, item := range items {
		for s := range strings.SplitSeq(item, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			u, err := ParseUpstream(s)
			if err != nil {
				return nil, err
			}
			ups = append(ups, u)
		}
	}
	all, per, err := ParseTimeouts(timeouts)
	if err != nil {
		return nil, err
	}
	for i := range ups {
		ups[i].Timeout = all
		if d, ok := per[ups[i].Name]; ok {
			ups[i].Timeout = d
			delete(per, ups[i].Name)
		}
	}
	for name := range per {
		return nil, fmt.Errorf("upstream timeout for %q: no such upstream", name)
	}
	return ups, nil
}

// ParseTimeouts reads upstream timeouts, each "DURATION" (every upstream)
// or "NAME=DURATION" (one), several separated by commas; the last of
// each wins. all is zero when none applies to every upstream.
func ParseTimeouts(items []string) (all time.Duration, per map[string]time.Duration, err error) {
	per = map[string]time.Duration{}
	for _, item := range items {
		for s := range strings.SplitSeq(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			name, v, named := strings.Cut(s, "=")
			if !named {
				name, v = "", s
			}
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return 0, nil, fmt.Errorf("upstream timeout %q: want DURATION or NAME=DURATION with a positive Go duration such as 30s", s)
			}
			if !named {
				all = d
				continue
			}
			per[strings.TrimSpace(name)] = d
		}
	}
	return all, per, nil
}
