package driver

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// ParseURL parses raw for an Opener, with errors that wrap ErrBadURL and
// never repeat the input: url.Parse's own errors quote the whole URL,
// password included.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot parse it as a URL (%s)", ErrBadURL, URLProblem(err))
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("%w: no scheme (such as redis: or sqlite:) names the driver", ErrBadURL)
	}
	return u, nil
}

// URLProblem names what url.Parse disliked without echoing any of the
// input, whose messages quote the URL, password included: for a driver's
// own Open(rawURL) to say what is wrong with a URL safely.
func URLProblem(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return "malformed URL"
	}
	var escape url.EscapeError
	var host url.InvalidHostError
	switch msg := ue.Err.Error(); {
	case errors.As(ue.Err, &escape):
		return "invalid %-escape"
	case errors.As(ue.Err, &host):
		return "invalid character in host"
	case strings.HasPrefix(msg, "invalid port"):
		return "invalid port"
	case strings.Contains(msg, "IP-literal"):
		return "invalid IPv6 address (a URL can hold only one bracketed address: name several hosts by name)"
	case strings.Contains(msg, "userinfo"):
		return "invalid user or password (characters such as '@', ':' or '/' in a password must be %-escaped)"
	case strings.Contains(msg, "control character"):
		return "control character in URL"
	case strings.Contains(msg, "missing protocol scheme"):
		return "missing scheme"
	default:
		return "malformed URL"
	}
}

// Redact returns msg with u's password, in every spelling it may have in the
// URL, replaced by "xxxxx": messages of a client library may quote parts of
// the URL, and the password can be repeated elsewhere in it (in a query
// value, say).
func Redact(msg string, u *url.URL) string {
	if u == nil || u.User == nil {
		return msg
	}
	password, ok := u.User.Password()
	if !ok || password == "" {
		return msg
	}
	for _, p := range []string{u.User.String(), password, url.QueryEscape(password), url.PathEscape(password)} {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return msg
}

// CheckParams returns an error wrapping ErrBadURL when u's query has a
// parameter known does not list, or one given twice: a typo must not
// silently leave a default in place.
func CheckParams(u *url.URL, known ...string) error {
	q := u.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case !slices.Contains(known, name):
			if len(known) == 0 {
				return fmt.Errorf("%w: unknown parameter %q: %s URLs take none", ErrBadURL, name, u.Scheme)
			}
			return fmt.Errorf("%w: unknown parameter %q (known: %s)", ErrBadURL, name, strings.Join(known, ", "))
		case len(q[name]) > 1:
			return fmt.Errorf("%w: parameter %q is given %d times", ErrBadURL, name, len(q[name]))
		}
	}
	return nil
}

// URLPath returns the path a URL such as sqlite:///var/lib/locks.db,
// sqlite:locks.db or file:/tmp/locks names: the path of a hierarchical URL,
// the unescaped opaque part of one without "//". A host is refused (the
// path is local), and so is an empty path.
func URLPath(u *url.URL) (string, error) {
	if u.Host != "" || u.User != nil {
		return "", fmt.Errorf("%w: a %s URL names a local path, not a host (write %s:///absolute/path or %s:relative/path)", ErrBadURL, u.Scheme, u.Scheme, u.Scheme)
	}
	p := u.Path
	if u.Opaque != "" {
		var err error
		if p, err = url.PathUnescape(u.Opaque); err != nil {
			return "", fmt.Errorf("%w: invalid %%-escape in the path", ErrBadURL)
		}
	}
	if p == "" {
		return "", fmt.Errorf("%w: a %s URL needs a path (write %s:///absolute/path or %s:relative/path)", ErrBadURL, u.Scheme, u.Scheme, u.Scheme)
	}
	return p, nil
}

// PathURL is the URL that URLPath reads path back from: scheme:///path for
// an absolute one, scheme:path for a relative one, %-escaped.
func PathURL(scheme, path string) *url.URL {
	escaped := (&url.URL{Path: path}).EscapedPath()
	if strings.HasPrefix(path, "/") {
		return &url.URL{Scheme: scheme, Path: path, RawPath: escaped}
	}
	if strings.HasPrefix(escaped, "./") && !strings.HasPrefix(path, "./") {
		escaped = escaped[2:] // EscapedPath guards a colon in the first segment; an opaque part needs no guard
	}
	return &url.URL{Scheme: scheme, Opaque: escaped}
}
