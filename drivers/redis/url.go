package redis

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/driver"
)

// The Redis driver registers itself as "redis", for every scheme it opens.
func init() {
	driver.Register("redis", driver.OpenerFunc(func(u *url.URL) (driver.Driver, error) {
		d, err := OpenURL(u)
		if err != nil {
			return nil, err // a nil interface, never a typed nil *Driver
		}
		return d, nil
	}), schemeRedis, schemeTLS, schemeUnix, schemeSentinel, schemeSentinelTLS, schemeCluster, schemeClusterTLS)
}

// The URL schemes, one per kind of deployment. A "+sentinel" or "+cluster"
// URL is go-redis's failover or cluster URL with that scheme, so that the
// scheme alone says which client it takes: the other nodes go in addr=
// parameters, as go-redis reads them.
const (
	schemeRedis       = "redis"
	schemeTLS         = "rediss"
	schemeUnix        = "unix"
	schemeSentinel    = "redis+sentinel"
	schemeSentinelTLS = "rediss+sentinel"
	schemeCluster     = "redis+cluster"
	schemeClusterTLS  = "rediss+cluster"
)

// paramClusterReload is the option of a cluster URL that sets how often the
// client reloads the cluster's slot map (go-redis's
// ClusterStateReloadInterval), and defaultClusterReload its default: a
// failover's new primary is found within about that time.
const (
	paramClusterReload   = "cluster_reload"
	defaultClusterReload = time.Second
)

// urlEnv is the environment variable Open reads when given an empty URL.
const urlEnv = "REDIS_URL"

// urlForm is the shape of a URL Open accepts, for error messages.
const urlForm = "redis://[user:password@]host[:port][/db], rediss://… for TLS, unix://[user:password@]/path/to/socket[?db=N], " +
	"redis+sentinel://[user:password@]sentinel:26379[/db]?master_name=NAME[&addr=sentinel2:26379…], " +
	"or redis+cluster://[user:password@]node:7000[?addr=node2:7000…][&cluster_reload=1s]"

// newClient makes the go-redis client a URL names: standalone (redis,
// rediss, unix), sentinel-backed or cluster.
func newClient(u *url.URL) (goredis.UniversalClient, error) {
	if u.Opaque != "" {
		// Without "//" there is no userinfo to redact: show nothing of it.
		return nil, fmt.Errorf("%w: no \"//\" after the scheme; want %s", driver.ErrBadURL, urlForm)
	}
	if err := checkQuery(u.Query()); err != nil {
		return nil, badURL(u, err.Error())
	}
	base, kind, _ := strings.Cut(strings.ToLower(u.Scheme), "+")
	if base != schemeRedis && base != schemeTLS && !(base == schemeUnix && kind == "") {
		return nil, badURL(u, fmt.Sprintf("unsupported scheme %q; want %s", u.Scheme, urlForm))
	}
	goURL := *u
	goURL.Scheme = base
	reload := defaultClusterReload
	if kind == "cluster" {
		q := goURL.Query()
		if v := q.Get(paramClusterReload); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Millisecond {
				return nil, badURL(u, fmt.Sprintf("option %s=%q is not a duration of at least 1ms (such as 1s or 500ms)", paramClusterReload, v))
			}
			reload = d
		}
		q.Del(paramClusterReload)
		goURL.RawQuery = q.Encode()
	}
	raw := goURL.String()
	switch kind {
	case "":
		opts, err := goredis.ParseURL(raw)
		if err != nil {
			return nil, badURL(u, strings.TrimPrefix(err.Error(), "redis: "))
		}
		// Without this go-redis ignores ctx deadlines and waits for its
		// own read timeout; the driver contract wants calls to end with
		// ctx.
		opts.ContextTimeoutEnabled = true
		return goredis.NewClient(opts), nil
	case "sentinel":
		opts, err := goredis.ParseFailoverURL(raw)
		if err == nil && opts.MasterName == "" {
			err = fmt.Errorf("a sentinel URL needs master_name=NAME")
		}
		if err != nil {
			return nil, badURL(u, strings.TrimPrefix(err.Error(), "redis: "))
		}
		opts.ContextTimeoutEnabled = true
		return goredis.NewFailoverClient(opts), nil
	case "cluster":
		opts, err := goredis.ParseClusterURL(raw)
		if err != nil {
			return nil, badURL(u, strings.TrimPrefix(err.Error(), "redis: "))
		}
		opts.ContextTimeoutEnabled = true
		// go-redis refreshes its slot map on a MOVED reply and, by
		// default, once a minute: after a failover the slots of a dead
		// primary would keep failing for up to a minute.
		opts.ClusterStateReloadInterval = reload
		return goredis.NewClusterClient(opts), nil
	}
	return nil, badURL(u, fmt.Sprintf("unsupported scheme %q; want %s", u.Scheme, urlForm))
}

// badURL is the error for a URL that cannot be used: what is wrong, with the
// URL shown without its password.
func badURL(u *url.URL, problem string) error {
	return fmt.Errorf("%w: %s", driver.ErrBadURL, redact(u.Redacted()+": "+problem, u))
}

// redact removes u's secrets from msg: the password of its userinfo, and
// the values of its query parameters that hold one (password=,
// sentinel_password=), which Redacted leaves in place.
func redact(msg string, u *url.URL) string {
	msg = driver.Redact(msg, u)
	for name, values := range u.Query() {
		if !strings.Contains(name, "password") {
			continue
		}
		for _, v := range values {
			if v != "" {
				msg = strings.ReplaceAll(msg, url.QueryEscape(v), "xxxxx")
				msg = strings.ReplaceAll(msg, v, "xxxxx")
			}
		}
	}
	return msg
}

// envURL is rawURL, or $REDIS_URL when rawURL is empty.
func envURL(rawURL string) (*url.URL, error) {
	if rawURL == "" {
		rawURL = os.Getenv(urlEnv)
		if rawURL == "" {
			return nil, fmt.Errorf("%w: the URL is empty and $%s is not set; want %s", driver.ErrBadURL, urlEnv, urlForm)
		}
	}
	return driver.ParseURL(rawURL)
}

// intRanges are the integer query options go-redis takes and the values
// that make sense for them. go-redis itself accepts any integer and panics
// on some (a negative pool_size), or silently falls back to its default on
// others (pool_size=0): every one is checked here first, so that a URL
// either means what it says or is refused.
var intRanges = map[string]struct{ min, max int64 }{
	"db":                         {0, 1<<31 - 1},
	"protocol":                   {2, 3},
	"max_retries":                {-1, 1 << 16}, // -1: no retries
	"max_redirects":              {-1, 1 << 16},
	"pool_size":                  {1, 1 << 20},
	"min_idle_conns":             {0, 1 << 20},
	"max_idle_conns":             {0, 1 << 20},
	"max_active_conns":           {0, 1 << 20}, // 0: no limit
	"max_concurrent_dials":       {1, 1 << 20},
	"dialer_retries":             {1, 1 << 16},
	"pipeline_pool_size":         {-1, 1 << 20}, // -1: no pipeline pool
	"pipeline_read_buffer_size":  {0, 1 << 30},
	"pipeline_write_buffer_size": {0, 1 << 30},
}

// checkQuery checks the integer options of a Redis URL's query against
// intRanges, and that no option is given twice but addr=, which lists
// nodes. go-redis checks the rest (durations, booleans, unknown names).
func checkQuery(q url.Values) error {
	for name, values := range q {
		if len(values) > 1 && name != "addr" {
			return fmt.Errorf("option %s is given %d times", name, len(values))
		}
		r, ok := intRanges[name]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		switch {
		case err != nil:
			return fmt.Errorf("option %s=%q is not an integer", name, values[0])
		case n < r.min || n > r.max:
			return fmt.Errorf("option %s=%d is out of range: want %d to %d", name, n, r.min, r.max)
		}
	}
	return nil
}
