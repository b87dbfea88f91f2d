package lock

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/zerotal/lock/driver"
	_ "github.com/zerotal/lock/drivers/memory" // the default driver, registered by its init
)

// open is Open.
func open(cfg Config) (*Manager, error) {
	return openWith(cfg, nil)
}

// openWith is OpenWith: it names the driver and the URL that configures it,
// from cfg.URL or from cfg.Driver and its fields, and asks the registry to
// open it. opts apply over cfg: a WithPrefix among them wins over
// cfg.Prefix.
func openWith(cfg Config, opts []ManagerOption) (*Manager, error) {
	cfg = cfg.withDefaults()
	target, err := cfg.target()
	if err != nil {
		return nil, err
	}
	opener, ok := driver.Lookup(target.driver)
	if !ok {
		return nil, unregistered(target.driver, target.named)
	}
	d, err := opener.OpenURL(target.url)
	switch {
	case errors.Is(err, driver.ErrBadURL):
		return nil, &InvalidArgumentError{Field: target.field, Reason: err.Error()}
	case err != nil:
		return nil, &DriverError{Op: "open " + target.driver, Err: err}
	case d == nil:
		return nil, &DriverError{Op: "open " + target.driver, Err: errors.New("its Opener returned no driver and no error")}
	}
	o := newManagerOptions(append([]ManagerOption{WithPrefix(cfg.Prefix)}, opts...))
	m := newEngine(d, o.prefix)
	m.observe(o, target.driver)
	return m, nil
}

// target is a driver to open: its registered name, the URL to give its
// Opener, and the Config fields that named the driver and that the URL
// came from, to blame in errors.
type target struct {
	driver string
	url    *url.URL
	named  string // "Config.URL" or "Config.Driver"
	field  string
}

// target names the driver cfg selects: cfg.URL's scheme when it is set,
// else cfg.Driver, with a URL made from that driver's fields.
func (cfg Config) target() (target, error) {
	if cfg.URL != "" {
		u, err := driver.ParseURL(cfg.URL)
		if err != nil {
			return target{}, &InvalidArgumentError{Field: "Config.URL", Reason: err.Error()}
		}
		name, ok := driver.ForScheme(u.Scheme)
		if !ok {
			return target{}, unregistered(u.Scheme, "Config.URL")
		}
		return target{driver: name, url: u, named: "Config.URL", field: "Config.URL"}, nil
	}
	t := target{driver: cfg.Driver, url: &url.URL{Scheme: cfg.Driver}, named: "Config.Driver", field: "Config.Driver"}
	switch cfg.Driver {
	case "sqlite":
		t.url, t.field = driver.PathURL("sqlite", cfg.SQLite.Path), "Config.SQLite.Path"
	case "file":
		if cfg.File.Dir == "" {
			return t, &InvalidArgumentError{Field: "Config.File.Dir", Reason: "is empty and LOCK_FILE_DIR is not set: name the lock directory"}
		}
		t.url, t.field = driver.PathURL("file", cfg.File.Dir), "Config.File.Dir"
	case "redis":
		if cfg.Redis.URL == "" {
			return t, &InvalidArgumentError{Field: "Config.Redis.URL", Reason: "is empty and REDIS_URL is not set: name the Redis server"}
		}
		u, err := driver.ParseURL(cfg.Redis.URL)
		if err != nil {
			return t, &InvalidArgumentError{Field: "Config.Redis.URL", Reason: err.Error()}
		}
		t.url, t.field = u, "Config.Redis.URL"
	}
	return t, nil
}

// officialDrivers maps the drivers of this repository, by name and by URL
// scheme, to the package that registers them, so that a program that has
// not imported one is told which import it needs.
var officialDrivers = map[string]string{
	"sqlite":          "drivers/sqlite",
	"file":            "drivers/file",
	"redis":           "drivers/redis",
	"rediss":          "drivers/redis",
	"unix":            "drivers/redis",
	"redis+sentinel":  "drivers/redis",
	"rediss+sentinel": "drivers/redis",
	"redis+cluster":   "drivers/redis",
	"rediss+cluster":  "drivers/redis",
	"postgres":        "drivers/postgres",
	"postgresql":      "drivers/postgres",
	"etcd":            "drivers/etcd",
	"etcds":           "drivers/etcd",
}

// unregistered is the error for a driver nobody registered, named by the
// Config field field.
func unregistered(name, field string) error {
	known := strings.Join(driver.Names(), ", ")
	if name == "" {
		return &InvalidArgumentError{Field: field, Reason: "names no driver (registered: " + known + ")"}
	}
	reason := fmt.Sprintf("%q is not a registered driver (registered: %s)", name, known)
	if pkg, ok := officialDrivers[strings.ToLower(name)]; ok {
		reason += fmt.Sprintf(`; import _ "github.com/zerotal/lock/%s" to register it`, pkg)
	} else {
		reason += "; import the package of the driver that registers it"
	}
	return &InvalidArgumentError{Field: field, Reason: reason}
}
