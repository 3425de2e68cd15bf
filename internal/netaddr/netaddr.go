package netaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// ErrAddress is wrapped by every error of this package: an address that cannot be bound
// or advertised as given.
var ErrAddress = errors.New("unusable address")

// Check reports whether the listener of the given kind ("raft", "client", "admin") can
// advertise an address, from its advertise setting and its listen address: advertise,
// if set, is HOST or HOST:PORT with a host other machines can dial; without it the listen
// address is what is advertised, so its host must be dialable too. The error names the
// kind, the address and the flag that fixes it (--KIND-advertise).
func Check(kind, advertise, listen string) error {
	if advertise == "" {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			return fmt.Errorf("%w: %s listen address %q: want HOST:PORT: %w", ErrAddress, kind, listen, err)
		}
		if !dialable(host) {
			return fmt.Errorf("%w: %s listen address %q binds every interface, which is not an address other machines can dial: "+
				"give --%s-advertise HOST:PORT, the address peers and clients should use", ErrAddress, kind, listen, kind)
		}
		return nil
	}
	host, port, err := split(advertise)
	if err != nil {
		return fmt.Errorf("%w: %s advertise address %q: want HOST or HOST:PORT: %w", ErrAddress, kind, advertise, err)
	}
	if !dialable(host) {
		return fmt.Errorf("%w: %s advertise address %q: the host must be a DNS name or a specific IP address that other machines can dial, "+
			"not an unspecified address (0.0.0.0, ::)", ErrAddress, kind, advertise)
	}
	if port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("%w: %s advertise address %q: port %q is not a number from 0 to 65535", ErrAddress, kind, advertise, port)
		}
	}
	return nil
}

// Resolve returns the address to advertise for a listener bound at bound: advertise if
// it has a port other than 0, advertise's host with bound's port if it has none (or 0),
// and bound itself if advertise is empty.
func Resolve(advertise string, bound net.Addr) (string, error) {
	if advertise == "" {
		return bound.String(), nil
	}
	host, port, err := split(advertise)
	if err != nil {
		return "", fmt.Errorf("%w: advertise address %q: %w", ErrAddress, advertise, err)
	}
	if port != "" && port != "0" {
		return net.JoinHostPort(host, port), nil
	}
	_, boundPort, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "", fmt.Errorf("%w: bound address %q: %w", ErrAddress, bound, err)
	}
	return net.JoinHostPort(host, boundPort), nil
}

// Addr is an advertised TCP address as a net.Addr.
type Addr string

// Network returns "tcp".
func (Addr) Network() string { return "tcp" }

// String returns the address.
func (a Addr) String() string { return string(a) }

// split splits HOST or HOST:PORT (an IPv6 host in brackets when a port follows); port is
// "" when there is none.
func split(addr string) (host, port string, err error) {
	if host, port, err = net.SplitHostPort(addr); err == nil {
		return host, port, nil
	}
	if ip, perr := netip.ParseAddr(addr); perr == nil {
		return ip.String(), "", nil // a bare IPv6 address has colons but no port
	}
	if _, _, err2 := net.SplitHostPort(addr + ":0"); err2 != nil {
		return "", "", err
	}
	return addr, "", nil
}

// dialable reports whether host is a name or a specific IP address: not empty and not
// unspecified (0.0.0.0, ::).
func dialable(host string) bool {
	if host == "" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsUnspecified()
}
