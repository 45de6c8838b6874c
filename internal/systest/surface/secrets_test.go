package surface_test

import (
	"regexp"
	"strings"
	"sync"
)

// secrets are the values no answer and no log line may carry: the admin
// secret, the upstream's password, the secret part of every API key, and
// lease tokens, each of which only the claim that issued it may hand out.
type secrets struct {
	mu     sync.Mutex
	names  map[string]string // secret → what it is, for messages
	tokens map[string]bool
}

func newSecrets() *secrets {
	return &secrets{names: map[string]string{}, tokens: map[string]bool{}}
}

// add records secrets that appear nowhere, ever.
func (s *secrets) add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		s.names[v] = "a configured secret"
	}
}

// addKey records an API key handed out (shown once, in the answer that
// created it): its secret part may appear nowhere else.
func (s *secrets) addKey(key string) {
	if i := strings.LastIndexByte(key, '_'); i >= 0 && len(key)-i > 16 {
		s.mu.Lock()
		s.names[key[i+1:]] = "the secret of API key " + key[:i]
		s.mu.Unlock()
	}
}

// addToken records a lease token.
func (s *secrets) addToken(token string) {
	s.mu.Lock()
	s.tokens[token] = true
	s.mu.Unlock()
}

// leaks returns what of the secrets text holds, but the lease tokens in
// allowed (those the answer hands to its caller).
func (s *secrets) leaks(text string, allowed map[string]bool) []string {
	if text == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []string
	for v, what := range s.names {
		if strings.Contains(text, v) {
			found = append(found, what)
		}
	}
	for _, tok := range uuidText.FindAllString(text, -1) {
		tok = strings.ToLower(tok)
		if s.tokens[tok] && !allowed[tok] {
			found = append(found, "lease token "+tok)
		}
	}
	return found
}

// uuidText finds UUIDs in text, as lease tokens are written.
var uuidText = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
