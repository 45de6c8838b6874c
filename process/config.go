package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// namespaceConfig is one element of ParseNamespaces's JSON.
type namespaceConfig struct {
	Namespace string `json:"namespace"`
	URL       string `json:"url"`
	Timeout   string `json:"timeout"`
}

// ParseNamespaces reads the HTTP processors of `jobd serve --processors`
// (JOBD_PROCESSORS): a JSON array of {"namespace": NAME, "url": URL,
// "timeout": DURATION}, timeout optional (DefaultTimeout).
func ParseNamespaces(raw []byte) ([]Namespace, error) {
	var cfgs []namespaceConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfgs); err != nil {
		return nil, fmt.Errorf("processors: %w", err)
	}
	seen := map[string]bool{}
	out := make([]Namespace, 0, len(cfgs))
	for i, c := range cfgs {
		if c.Namespace == "" {
			return nil, fmt.Errorf("processors[%d]: namespace is required", i)
		}
		if seen[c.Namespace] {
			return nil, fmt.Errorf("processors[%d]: namespace %q given twice", i, c.Namespace)
		}
		seen[c.Namespace] = true
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("processors[%d]: url must be an http(s) URL, got %q", i, c.URL)
		}
		ns := Namespace{Name: c.Namespace, Processor: &HTTPProcessor{URL: c.URL}}
		if c.Timeout != "" {
			if ns.Timeout, err = time.ParseDuration(c.Timeout); err != nil || ns.Timeout <= 0 {
				return nil, fmt.Errorf("processors[%d]: timeout must be a positive Go duration, got %q", i, c.Timeout)
			}
		}
		out = append(out, ns)
	}
	return out, nil
}
