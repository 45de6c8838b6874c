package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// SecretPrefix starts every secret's text, as the Standard Webhooks
// specification writes them: "whsec_" then the key in base64.
const SecretPrefix = "whsec_"

// Bounds of a secret's key, in bytes (the specification's).
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// newSecretBytes is the size of the keys NewSecret makes.
const newSecretBytes = 32

// NewSecret returns a new random secret in its "whsec_" form.
func NewSecret() (string, error) {
	key := make([]byte, newSecretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhook: new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret returns the key of a secret in its "whsec_<base64>" form:
// the base64 part, decoded, of MinSecretBytes to MaxSecretBytes bytes.
// The error never repeats the secret.
func ParseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a secret must be %q followed by base64", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("a secret must be %q followed by standard base64 (padded)", SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("a secret's key must be %d to %d bytes, got %d", MinSecretBytes, MaxSecretBytes, len(key))
	}
	return key, nil
}
