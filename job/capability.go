package job

import "slices"

// Limits on a job's requires and prefers, and on a worker's capabilities.
const (
	// MaxCapabilities caps the names in one list.
	MaxCapabilities = 32
	// MaxCapabilityLen caps the length of one name.
	MaxCapabilityLen = 64
)

// NormalizeCapabilities validates a list of capability names (a job's
// requires or prefers, a worker's capabilities) and returns it sorted
// without duplicates; nil for an empty list. A name is a short token:
// 1 to MaxCapabilityLen characters of [A-Za-z0-9_.:-].
func NormalizeCapabilities(field string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > MaxCapabilities {
		return nil, Invalid(field, "has %d names, over the limit of %d", len(names), MaxCapabilities)
	}
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !capabilityToken(n) {
			return nil, Invalid(field, "name %q must be 1 to %d characters of A-Z a-z 0-9 _ . : -", truncate(n, 80), MaxCapabilityLen)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// HasAll reports whether have contains every name of want.
func HasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func capabilityToken(s string) bool {
	if s == "" || len(s) > MaxCapabilityLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
