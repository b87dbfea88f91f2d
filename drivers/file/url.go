package file

import (
	"net/url"

	"github.com/zerotal/lock/driver"
)

// The lock-directory driver registers itself as "file".
func init() { driver.Register("file", driver.OpenerFunc(openURL)) }

// openURL opens the lock directory a URL names: file:///absolute/dir or
// file:relative/dir (relative to the working directory), created if
// missing. The URL takes no parameters.
func openURL(u *url.URL) (driver.Driver, error) {
	if err := driver.CheckParams(u); err != nil {
		return nil, err
	}
	dir, err := driver.URLPath(u)
	if err != nil {
		return nil, err
	}
	d, err := Open(dir)
	if err != nil {
		return nil, err
	}
	return d, nil
}
