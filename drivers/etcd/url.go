package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zerotal/lock/driver"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// errBadURL is wrapped by every error Open and OpenURL return for a URL
// they cannot use: driver.ErrBadURL, which the engine reports as an
// invalid argument. Those errors name the bad part and never contain the
// password.
var errBadURL = fmt.Errorf("etcd: %w", driver.ErrBadURL)

// urlForm is the shape of a URL Open accepts, for error messages.
const urlForm = "etcd://[user:password@]host[:port][,host[:port]…][/?param=value&…], or etcds://… for TLS"

// defaultPort is etcd's client port, for members named without a port.
const defaultPort = "2379"

// The gRPC keep-alive of a client Open makes: a connection to a member that
// stops answering is dropped, and its calls and watches move to another
// member, within keepAliveTime + keepAliveTimeout.
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 3 * time.Second
)

// The query parameters a URL may have.
const (
	paramPrefix      = "prefix"
	paramDialTimeout = "dial_timeout"
	paramOpTimeout   = "op_timeout"
	paramWaiterTTL   = "waiter_ttl"
	paramCAFile      = "ca_file"
	paramCertFile    = "cert_file"
	paramKeyFile     = "key_file"
	paramServerName  = "server_name"
)

// tlsParams are the parameters only an etcds:// URL may have.
var tlsParams = []string{paramCAFile, paramCertFile, paramKeyFile, paramServerName}

// knownParams are all the parameters, in the order error messages list them.
var knownParams = append([]string{paramPrefix, paramDialTimeout, paramOpTimeout, paramWaiterTTL}, tlsParams...)

// Open connects to the etcd cluster that rawURL names and returns a Driver
// on it; see [OpenURL] for the URL's form. opts come after the URL's own
// settings, so they win. Close closes the client Open made.
func Open(rawURL string, opts ...Option) (*Driver, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("%w: the URL is empty; want %s", errBadURL, urlForm)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's errors quote the whole URL, password included.
		return nil, fmt.Errorf("%w: cannot parse it as a URL (%s); want %s", errBadURL, driver.URLProblem(err), urlForm)
	}
	return open(u, opts)
}

// OpenURL connects to the etcd cluster that u names and returns a Driver on
// it:
//
//	etcd://[user:password@]host[:port][,host[:port]…][/?param=value&…]
//	etcds://…  the same over TLS
//
// Members are separated by commas; a member without a port is on 2379.
// With user:password the client authenticates to etcd's RBAC. Parameters:
//
//	prefix        the prefix of every key the driver writes (WithPrefix)
//	dial_timeout  how long connecting may take (default 5s)
//	op_timeout    how long one attempt of an operation may take (WithOpTimeout)
//	waiter_ttl    the TTL of the lease holding this Driver's waiters (WithWaiterTTL)
//	ca_file       etcds only: PEM file of the CAs to trust instead of the system's
//	cert_file     etcds only: PEM client certificate, with key_file
//	key_file      etcds only: PEM key of cert_file
//	server_name   etcds only: the name to verify the members' certificates for
//
// Durations are Go durations ("500ms", "2s"). An unknown or repeated
// parameter is an error. Every error wraps [errBadURL], names the bad part
// and never contains the password. The client connects in the background:
// an unreachable cluster makes the first call fail, not OpenURL.
func OpenURL(u *url.URL) (*Driver, error) {
	if u == nil {
		return nil, fmt.Errorf("%w: the URL is nil; want %s", errBadURL, urlForm)
	}
	return open(u, nil)
}

// open parses u into a client configuration and options, and opens the
// client.
func open(u *url.URL, opts []Option) (*Driver, error) {
	cfg, uopts, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: creating the client for %v: %w", cfg.Endpoints, err)
	}
	d := New(c, append(uopts, opts...)...)
	d.ownsClient = true
	return d, nil
}

// parseURL checks u and turns it into a client configuration and Driver
// options, without touching the network.
func parseURL(u *url.URL) (clientv3.Config, []Option, error) {
	var cfg clientv3.Config
	bad := func(format string, args ...any) (clientv3.Config, []Option, error) {
		return clientv3.Config{}, nil, fmt.Errorf("%w: %s; want %s", errBadURL, fmt.Sprintf(format, args...), urlForm)
	}
	if u.Opaque != "" || u.Scheme == "" {
		return bad("no scheme followed by \"//\"")
	}
	secure := false
	switch u.Scheme {
	case "etcd":
	case "etcds":
		secure = true
	default:
		return bad("unsupported scheme %q", u.Scheme)
	}
	if u.Path != "" && u.Path != "/" {
		return bad("unexpected path %q (the URL names a cluster, not a key: use the prefix parameter)", u.Path)
	}
	if u.Fragment != "" {
		return bad("unexpected fragment")
	}
	if u.User != nil {
		password, ok := u.User.Password()
		cfg.Username = u.User.Username()
		switch {
		case cfg.Username == "":
			return bad("a password without a user name")
		case !ok || password == "":
			return bad("user %q without a password (etcd authenticates with both)", cfg.Username)
		}
		cfg.Password = password
	}
	endpoints, err := parseHosts(u.Host)
	if err != nil {
		return bad("%v", err)
	}
	cfg.Endpoints = endpoints
	cfg.DialTimeout = DefaultDialTimeout
	// gRPC keep-alives are what notice a member that hangs with its
	// connections open (a frozen process or host): without them a watch
	// on it would wait for ever. etcd refuses pings more often than every
	// 5s.
	cfg.DialKeepAliveTime, cfg.DialKeepAliveTimeout = keepAliveTime, keepAliveTimeout
	// The client logs through zap; a library must not write to the
	// application's stderr on its own.
	cfg.Logger = zap.NewNop()

	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("the query does not parse (%s)", queryProblem(err))
	}
	var unknown []string
	for name, values := range query {
		switch {
		case !slices.Contains(knownParams, name):
			unknown = append(unknown, name)
		case len(values) > 1:
			return bad("parameter %s is given %d times", name, len(values))
		case !secure && slices.Contains(tlsParams, name):
			return bad("parameter %s needs an etcds:// URL", name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return bad("unknown parameter %s (known: %s)", strings.Join(quoteAll(unknown), ", "), strings.Join(knownParams, ", "))
	}
	var opts []Option
	if p := query.Get(paramPrefix); p != "" {
		opts = append(opts, WithPrefix(p))
	} else if query.Has(paramPrefix) {
		return bad("parameter prefix is empty (leave it out for the default %q)", DefaultPrefix)
	}
	for _, p := range []struct {
		name string
		set  func(time.Duration)
	}{
		{paramDialTimeout, func(d time.Duration) { cfg.DialTimeout = d }},
		{paramOpTimeout, func(d time.Duration) { opts = append(opts, WithOpTimeout(d)) }},
		{paramWaiterTTL, func(d time.Duration) { opts = append(opts, WithWaiterTTL(d)) }},
	} {
		if !query.Has(p.name) {
			continue
		}
		v := query.Get(p.name)
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return bad("parameter %s=%q is not a positive duration such as \"500ms\" or \"2s\"", p.name, v)
		}
		p.set(d)
	}
	if secure {
		tlsCfg, err := tlsConfig(query)
		if err != nil {
			return bad("%v", err)
		}
		cfg.TLS = tlsCfg
	}
	return cfg, opts, nil
}

// parseHosts splits a URL's host into the members' addresses, adding the
// default port where one is missing.
func parseHosts(hosts string) ([]string, error) {
	if hosts == "" {
		return nil, errors.New("no host")
	}
	var endpoints []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("an empty member in the host list %q", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: "name", "10.0.0.1" or "[::1]". Anything else with a
			// colon is a malformed host:port.
			bracketed := strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")
			if strings.Contains(h, ":") && !bracketed {
				return nil, fmt.Errorf("member %q is not host:port", h)
			}
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
		}
		if host == "" {
			return nil, fmt.Errorf("member %q has no host", h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("member %q has an invalid port %q", h, port)
		}
		endpoints = append(endpoints, net.JoinHostPort(host, port))
	}
	return endpoints, nil
}

// tlsConfig builds the client's TLS configuration from an etcds URL's
// parameters.
func tlsConfig(query url.Values) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: query.Get(paramServerName)}
	if ca := query.Get(paramCAFile); ca != "" {
		pemBytes, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("parameter ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("parameter ca_file: no PEM certificate in %q", ca)
		}
		cfg.RootCAs = pool
	}
	certFile, keyFile := query.Get(paramCertFile), query.Get(paramKeyFile)
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "" || keyFile == "":
		return nil, errors.New("parameters cert_file and key_file go together")
	default:
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("parameters cert_file, key_file: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// queryProblem names what url.ParseQuery disliked, without the query: a
// password may have been pasted there.
func queryProblem(err error) string {
	var escape url.EscapeError
	if errors.As(err, &escape) {
		return "invalid %-escape"
	}
	return "malformed query"
}

// quoteAll quotes each name for a message.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
