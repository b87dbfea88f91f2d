package sqlite

import (
	"net/url"

	"github.com/zerotal/lock/driver"
)

// The SQLite driver registers itself as "sqlite".
func init() { driver.Register("sqlite", driver.OpenerFunc(openURL)) }

// openURL opens the database a URL names: sqlite:///absolute/path.db,
// sqlite:relative/path.db (relative to the working directory), or
// sqlite::memory: for a database private to the Driver. The URL takes no
// parameters.
func openURL(u *url.URL) (driver.Driver, error) {
	if err := driver.CheckParams(u); err != nil {
		return nil, err
	}
	path, err := driver.URLPath(u)
	if err != nil {
		return nil, err
	}
	d, err := Open(path)
	if err != nil {
		return nil, err
	}
	return d, nil
}
