package etcd

import (
	"net/url"

	"github.com/zerotal/lock/driver"
)

// The etcd driver registers itself as "etcd", for etcd:// and, with TLS,
// etcds:// URLs.
func init() {
	driver.Register("etcd", driver.OpenerFunc(func(u *url.URL) (driver.Driver, error) {
		d, err := OpenURL(u)
		if err != nil {
			return nil, err
		}
		return d, nil
	}), "etcd", "etcds")
}
