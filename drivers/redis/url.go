package redis

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// ErrBadURL is wrapped by every error Open returns for a URL it cannot use.
// Those errors show the URL with its password replaced by "xxxxx" and never
// repeat the password itself.
var ErrBadURL = errors.New("redis: bad URL")

// urlEnv is the environment variable Open reads when given an empty URL.
const urlEnv = "REDIS_URL"

// urlForm is the shape of a URL Open accepts, for error messages.
const urlForm = "redis://[user:password@]host[:port][/db], rediss://… for TLS, or unix://[user:password@]/path/to/socket[?db=N]"

// clientOptions turns a Redis URL into go-redis client options.
func clientOptions(rawURL string) (*goredis.Options, error) {
	if rawURL == "" {
		rawURL = os.Getenv(urlEnv)
		if rawURL == "" {
			return nil, fmt.Errorf("%w: the URL is empty and $%s is not set; want %s", ErrBadURL, urlEnv, urlForm)
		}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's errors quote the whole URL, password included.
		return nil, fmt.Errorf("%w: cannot parse it as a URL (%s); want %s", ErrBadURL, parseProblem(err), urlForm)
	}
	if u.Opaque != "" || u.Scheme == "" {
		// Without "//" there is no userinfo to redact: show nothing of it.
		return nil, fmt.Errorf("%w: no scheme followed by \"//\"; want %s", ErrBadURL, urlForm)
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		return nil, fmt.Errorf("%w: %s", ErrBadURL, scrub(fmt.Sprintf("%s: unsupported scheme %q; want %s", u.Redacted(), u.Scheme, urlForm), u))
	}
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadURL, scrub(u.Redacted()+": "+strings.TrimPrefix(err.Error(), "redis: "), u))
	}
	return opts, nil
}

// parseProblem names what url.Parse disliked without echoing any of the
// input: its messages can quote fragments of the userinfo.
func parseProblem(err error) string {
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

// scrub removes u's password, in every spelling it may have in the URL, from
// msg: go-redis's messages quote parts of the URL, and the password can be
// repeated elsewhere in it (a query value, say).
func scrub(msg string, u *url.URL) string {
	if u.User == nil {
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
