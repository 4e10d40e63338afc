package remote

import (
	"fmt"
	"strconv"
	"strings"
)

// SSHAddr is an address of the form ssh:[USER@]HOST[:PORT]: the toolsrv of
// USER (default: ssh's choice) on HOST, reached by running ssh.
type SSHAddr struct {
	User, Host string
	Port       int // 0: ssh's choice (its config, else 22)
}

// IsSSH reports whether addr is an ssh: address.
func IsSSH(addr string) bool { return strings.HasPrefix(addr, "ssh:") }

// ParseSSH parses ssh:[USER@]HOST[:PORT] (an IPv6 HOST in brackets). HOST
// may be an alias of the ssh configuration. A user or host that ssh would
// take for an option (a leading '-'), or that holds spaces or control
// characters, is refused.
func ParseSSH(addr string) (SSHAddr, error) {
	rest, ok := strings.CutPrefix(addr, "ssh:")
	if !ok {
		return SSHAddr{}, fmt.Errorf("address %q: not an ssh: address", addr)
	}
	bad := func(why string) error {
		return fmt.Errorf("address %q: %s; write ssh:[USER@]HOST[:PORT], e.g. ssh:build-server or ssh:me@10.0.0.5:2222", addr, why)
	}
	var a SSHAddr
	if u, h, ok := strings.Cut(rest, "@"); ok {
		a.User, rest = u, h
		if a.User == "" {
			return SSHAddr{}, bad("empty user")
		}
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return SSHAddr{}, bad("unclosed '[' in the host")
		}
		host = rest[1:end]
		if after := rest[end+1:]; after != "" {
			p, ok := strings.CutPrefix(after, ":")
			if !ok {
				return SSHAddr{}, bad("unexpected text after the host")
			}
			port = p
		}
	} else if h, p, ok := strings.Cut(rest, ":"); ok {
		host, port = h, p
	}
	if host == "" {
		return SSHAddr{}, bad("no host")
	}
	a.Host = host
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return SSHAddr{}, bad(fmt.Sprintf("port %q is not a number from 1 to 65535", port))
		}
		a.Port = n
	}
	for _, s := range []string{a.User, a.Host} {
		if strings.HasPrefix(s, "-") {
			return SSHAddr{}, bad(fmt.Sprintf("%q begins with '-', which ssh would read as an option", s))
		}
		if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return SSHAddr{}, bad(fmt.Sprintf("%q holds a space or a control character", s))
		}
	}
	return a, nil
}

// String is the address as it was written (ssh:...).
func (a SSHAddr) String() string {
	s := "ssh:"
	if a.User != "" {
		s += a.User + "@"
	}
	host := a.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	s += host
	if a.Port != 0 {
		s += ":" + strconv.Itoa(a.Port)
	}
	return s
}

// target is the destination argument for ssh: [USER@]HOST.
func (a SSHAddr) target() string {
	if a.User != "" {
		return a.User + "@" + a.Host
	}
	return a.Host
}
