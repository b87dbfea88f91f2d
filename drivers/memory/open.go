package memory

import (
	"fmt"
	"net/url"

	"github.com/zerotal/lock/driver"
)

// The memory driver registers itself as "memory", so that lock.Open and
// Config{} (whose default driver it is) reach it by name and by URL.
func init() { driver.Register("memory", driver.OpenerFunc(openURL)) }

// openURL opens the URL "memory:": a handle on the process-wide table, as
// [Shared] gives. The URL has nothing after its scheme.
func openURL(u *url.URL) (driver.Driver, error) {
	if u.Opaque != "" || u.Host != "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: the memory driver's URL is just \"memory:\"", driver.ErrBadURL)
	}
	return Shared(), nil
}
