//go:build !unix

package onehost

import "github.com/zerotal/lock/driver"

// roles is empty without flock(2): the Suite's checks need Unix.
var roles map[string]func(driver.Driver) error
