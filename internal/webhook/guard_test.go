package webhook

import (
	"errors"
	"net/netip"
	"testing"
)

func TestGuard(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "10.1.2.3", "172.16.0.1", "192.168.1.1",
		"169.254.169.254", "fe80::1", "fc00::1", "fd12:3456::1", "224.0.0.1", "ff02::1", "100.64.0.1",
		"192.0.0.8", "198.18.0.1", "240.0.0.1", "255.255.255.255",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", // IPv4-mapped
		"64:ff9b::a00:1", "2002:c0a8:101::1", // NAT64 of 10.0.0.1, 6to4 of 192.168.1.1
	}
	allowed := []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8", "64:ff9b::808:808", "::ffff:8.8.8.8"}
	var g Guard
	for _, a := range refused {
		if err := g.Check(netip.MustParseAddr(a)); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("Check(%s) = %v, want ErrForbiddenAddress", a, err)
		}
	}
	for _, a := range allowed {
		if err := g.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", a, err)
		}
	}
	if err := (Guard{AllowPrivate: true}).Check(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("AllowPrivate: %v", err)
	}
	g = Guard{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}}
	if err := g.Check(netip.MustParseAddr("10.20.3.4")); err != nil {
		t.Errorf("an allowed network: %v", err)
	}
	if err := g.Check(netip.MustParseAddr("10.21.3.4")); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("outside the allowed network: %v", err)
	}
	if err := g.control("tcp", "[::1]:80", nil); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("control of [::1]:80 = %v", err)
	}
	if err := g.control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Errorf("control of 8.8.8.8:443 = %v", err)
	}
}

func TestParseSecret(t *testing.T) {
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if key, err := ParseSecret(s); err != nil || len(key) != newSecretBytes {
		t.Fatalf("ParseSecret(NewSecret()) = %d bytes, %v", len(key), err)
	}
	for _, bad := range []string{"", "plain", "whsec_", "whsec_!!!!", "whsec_c2hvcnQ=", "whsec_" + string(make([]byte, 0))} {
		if _, err := ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
	if _, err := ParseSecret("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="); err != nil {
		t.Errorf("a 32-byte key: %v", err)
	}
}
