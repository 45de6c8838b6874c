package job

import (
	"slices"
	"strings"
)

// MaxQueuePatterns bounds the patterns of one QueuePatterns.
const MaxQueuePatterns = 64

// prefixSuffix ends a pattern that names a family of queues.
const prefixSuffix = ".*"

// QueuePatterns are the queues a remote worker or an API key is limited
// to: each a queue name ("video"), or a prefix written NAME.* ("video.*"),
// which matches every queue whose name starts with "NAME." ("video.hd",
// "video.hd.4k") but not NAME itself, unless that is listed too. Empty
// patterns limit nothing. ParseQueuePatterns makes them.
type QueuePatterns []string

// ParseQueuePatterns checks list as the queues of field and returns
// them, in their order, without repeats. At most MaxQueuePatterns; each
// a valid queue name (CheckName), not empty, with no "*" but in a final
// ".*", and naming no queue of jobd's own (ReservedQueue): those are
// jobd's alone. A nil or empty list is no limit.
func ParseQueuePatterns(field string, list []string) (QueuePatterns, error) {
	if len(list) > MaxQueuePatterns {
		return nil, Invalid(field, "at most %d queues, got %d", MaxQueuePatterns, len(list))
	}
	var out QueuePatterns
	for _, p := range list {
		if err := checkQueuePattern(field, p); err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func checkQueuePattern(field, p string) error {
	base, prefix := strings.CutSuffix(p, prefixSuffix)
	switch {
	case base == "":
		return Invalid(field, "%q is not a queue name nor a prefix NAME.*", p)
	case strings.Contains(base, "*"):
		return Invalid(field, "%q: a \"*\" may only end a prefix, as in video.*", p)
	}
	if err := CheckName(field, p); err != nil {
		return err
	}
	name := base
	if prefix {
		name = base + "."
	}
	if ReservedQueue(name) {
		return Invalid(field, "%q names a queue of jobd's own, which no worker or key may be given", p)
	}
	return nil
}

// Limited reports whether p limits anything (it is not empty).
func (p QueuePatterns) Limited() bool { return len(p) > 0 }

// Allows reports whether queue is one of p's: every queue when p is
// empty, else a queue p names or one a prefix of p matches.
func (p QueuePatterns) Allows(queue string) bool {
	if len(p) == 0 {
		return true
	}
	for _, pat := range p {
		if base, ok := strings.CutSuffix(pat, prefixSuffix); ok {
			if strings.HasPrefix(queue, base+".") {
				return true
			}
		} else if pat == queue {
			return true
		}
	}
	return false
}

// Split returns p's names and its prefixes (each with its final "."),
// for a store to filter by: a queue is p's when it is one of the names
// or starts with one of the prefixes.
func (p QueuePatterns) Split() (names, prefixes []string) {
	for _, pat := range p {
		if base, ok := strings.CutSuffix(pat, prefixSuffix); ok {
			prefixes = append(prefixes, base+".")
		} else {
			names = append(names, pat)
		}
	}
	return names, prefixes
}
