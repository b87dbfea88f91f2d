package etcd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

func TestURLsThatParse(t *testing.T) {
	ca := writeTestCA(t)
	for _, tc := range []struct {
		url       string
		endpoints []string
		user      string
		password  string
		tls       bool
		dial      time.Duration
		cfg       config
	}{
		{url: "etcd://127.0.0.1:23790", endpoints: []string{"127.0.0.1:23790"}},
		{url: "etcd://a:1,b:2,c:3", endpoints: []string{"a:1", "b:2", "c:3"}},
		{url: "etcd://a,b", endpoints: []string{"a:2379", "b:2379"}},
		{url: "etcd://[::1]:2379/", endpoints: []string{"[::1]:2379"}},
		{url: "etcd://[::1]", endpoints: []string{"[::1]:2379"}},
		{url: "etcd://root:s%40cr%3At@h:1", endpoints: []string{"h:1"}, user: "root", password: "s@cr:t"},
		{
			url:       "etcd://h:1/?prefix=locks%2Fteam-a%2F&op_timeout=500ms&waiter_ttl=5s&dial_timeout=1s",
			endpoints: []string{"h:1"},
			dial:      time.Second,
			cfg:       config{prefix: "locks/team-a/", opTimeout: 500 * time.Millisecond, waiterTTL: 5 * time.Second},
		},
		{url: "etcds://h:1", endpoints: []string{"h:1"}, tls: true},
		{url: "etcds://h:1/?ca_file=" + url.QueryEscape(ca) + "&server_name=etcd.internal", endpoints: []string{"h:1"}, tls: true},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", tc.url, err)
		}
		cfg, opts, err := parseURL(u)
		if err != nil {
			t.Errorf("parseURL(%q): %v", tc.url, err)
			continue
		}
		if !slices.Equal(cfg.Endpoints, tc.endpoints) {
			t.Errorf("parseURL(%q) endpoints = %v, want %v", tc.url, cfg.Endpoints, tc.endpoints)
		}
		if cfg.Username != tc.user || cfg.Password != tc.password {
			t.Errorf("parseURL(%q) user = %q, %q; want %q, %q", tc.url, cfg.Username, cfg.Password, tc.user, tc.password)
		}
		if (cfg.TLS != nil) != tc.tls {
			t.Errorf("parseURL(%q) TLS = %v, want %v", tc.url, cfg.TLS != nil, tc.tls)
		}
		if want := cmp(tc.dial, DefaultDialTimeout); cfg.DialTimeout != want {
			t.Errorf("parseURL(%q) dial timeout = %v, want %v", tc.url, cfg.DialTimeout, want)
		}
		got := defaultConfig()
		for _, o := range opts {
			o(&got)
		}
		want := defaultConfig()
		if tc.cfg != (config{}) {
			want = tc.cfg
		}
		if got != want {
			t.Errorf("parseURL(%q) options = %+v, want %+v", tc.url, got, want)
		}
	}
}

// cmp returns a unless it is zero, else b.
func cmp(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

func TestBadURLsNameTheProblemAndNeverThePassword(t *testing.T) {
	const password = "hunter2-Zq9"
	for _, tc := range []struct{ url, want string }{
		{"", "empty"},
		{"etcd:h:1", "scheme"},
		{"http://h:1", `unsupported scheme "http"`},
		{"etcd://", "no host"},
		{"etcd://h:1,,h:2", "empty member"},
		{"etcd://h:x", `invalid port`},
		{"etcd://h:0", `invalid port "0"`},
		{"etcd://h:99999", `invalid port`},
		{"etcd://:1", "no host"},
		{"etcd://h:1/locks", `unexpected path "/locks"`},
		{"etcd://h:1/#frag", "fragment"},
		{"etcd://root@h:1", `user "root" without a password`},
		{"etcd://:" + password + "@h:1", "password without a user name"},
		{"etcd://root:" + password + "@h:1/?pasword=" + password, `unknown parameter "pasword"`},
		{"etcd://root:" + password + "@h:1/?prefix=a&prefix=b", "prefix is given 2 times"},
		{"etcd://h:1/?prefix=", "prefix is empty"},
		{"etcd://h:1/?op_timeout=soon", `op_timeout="soon"`},
		{"etcd://h:1/?waiter_ttl=-1s", `waiter_ttl="-1s"`},
		{"etcd://h:1/?dial_timeout=0s", `dial_timeout="0s"`},
		{"etcd://h:1/?ca_file=/x.pem", "ca_file needs an etcds:// URL"},
		{"etcds://h:1/?ca_file=/nonexistent/ca.pem", "ca_file"},
		{"etcds://h:1/?cert_file=/c.pem", "cert_file and key_file go together"},
		{"etcd://h:1/?%zz", "invalid %-escape"},
		{"etcd://root:" + password + "@h:1:2:3", `member "h:1:2:3" is not host:port`},
		{"etcd://root:pass%zzword@h:1", "%-escape"},
		{"etcd://[::1]:1,[::2]:2", "IPv6"},
	} {
		d, err := Open(tc.url)
		if err == nil {
			d.Close()
			t.Errorf("Open(%q) succeeded; want an error mentioning %q", tc.url, tc.want)
			continue
		}
		if !errors.Is(err, driver.ErrBadURL) {
			t.Errorf("Open(%q) = %v; want an error wrapping driver.ErrBadURL", tc.url, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v; want it to mention %q", tc.url, err, tc.want)
		}
		if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "pass%zzword") {
			t.Errorf("Open(%q) = %v: the error shows the password", tc.url, err)
		}
	}
}

func TestOpenURLNil(t *testing.T) {
	if _, err := OpenURL(nil); !errors.Is(err, driver.ErrBadURL) {
		t.Errorf("OpenURL(nil) = %v; want driver.ErrBadURL", err)
	}
}

func TestOpenDoesNotContactTheServer(t *testing.T) {
	// Nothing listens on port 1; without a user, Open only builds the
	// client.
	start := time.Now()
	d, err := Open("etcd://127.0.0.1:1")
	if err != nil {
		t.Fatalf("Open of an unreachable cluster: %v; want the error at the first call", err)
	}
	defer d.Close()
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Open took %v", elapsed)
	}
}

// writeTestCA writes a self-signed CA certificate to a PEM file and returns
// its path, to give ca_file something to parse.
func writeTestCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
