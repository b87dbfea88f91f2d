package postgres

import (
	"net/url"

	"github.com/zerotal/lock/driver"
)

// The PostgreSQL driver registers itself as "postgres", for the postgres://
// and postgresql:// URLs of libpq and pgx.
func init() {
	driver.Register("postgres", driver.OpenerFunc(func(u *url.URL) (driver.Driver, error) {
		d, err := OpenURL(u)
		if err != nil {
			return nil, err
		}
		return d, nil
	}), "postgres", "postgresql")
}
