package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrForbiddenAddress is the error of a callback's connection to an
// address Guard refuses. Its deliveries fail at once, without retries.
var ErrForbiddenAddress = errors.New("address not allowed for callbacks")

// Guard decides which addresses a callback may connect to: public ones
// only, unless AllowPrivate, or unless one of AllowNetworks holds the
// address. It is checked at connect time, on the address the connection
// is about to use (after DNS, for every redirect), so that a host name
// whose answer changes between a check and the connection cannot slip
// through.
type Guard struct {
	// AllowPrivate allows every address.
	AllowPrivate bool
	// AllowNetworks allows the addresses they hold.
	AllowNetworks []netip.Prefix
}

// forbidden are the networks that are not public beyond what netip's
// predicates say: "this network", shared address space (carrier-grade
// NAT), IETF protocol assignments, benchmarking, reserved and broadcast,
// and the IPv6 ranges that embed an IPv4 address (NAT64, 6to4), whose
// embedded address is checked instead.
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// Check returns nil when a callback may connect to addr, or an error
// wrapping ErrForbiddenAddress that names it and why.
func (g Guard) Check(addr netip.Addr) error {
	if g.AllowPrivate {
		return nil
	}
	addr = addr.Unmap()
	for _, n := range g.AllowNetworks {
		if n.Contains(addr) {
			return nil
		}
	}
	if why := notPublic(addr); why != "" {
		return fmt.Errorf("%s is %s: %w (jobd serve --callback-allow-private, or --callback-allow-network, allows it)", addr, why, ErrForbiddenAddress)
	}
	return nil
}

// notPublic says why addr is not a public address, "" when it is.
func notPublic(addr netip.Addr) string {
	switch {
	case !addr.IsValid():
		return "not an address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "a link-local address"
	case addr.IsPrivate():
		return "a private address"
	case addr.IsUnspecified():
		return "the unspecified address"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, n := range forbidden {
		if n.Contains(addr) {
			return "a reserved address"
		}
	}
	if addr.Is6() {
		b := addr.As16()
		var embedded netip.Addr
		switch {
		case nat64.Contains(addr), nat64Local.Contains(addr):
			embedded = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(addr):
			embedded = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if embedded.IsValid() {
			if why := notPublic(embedded); why != "" {
				return why + " (embedded in " + addr.String() + ")"
			}
		}
	}
	return ""
}

// control is a net.Dialer's Control: it refuses a connection to an
// address Check refuses, before it is made.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(address)
		if splitErr != nil {
			return fmt.Errorf("%q: %w", address, ErrForbiddenAddress)
		}
		a, perr := netip.ParseAddr(host)
		if perr != nil {
			return fmt.Errorf("%q: %w", address, ErrForbiddenAddress)
		}
		return g.Check(a)
	}
	return g.Check(ap.Addr())
}
