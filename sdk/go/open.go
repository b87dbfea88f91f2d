package lock

import (
	"errors"
	"fmt"

	"github.com/zerotal/lock/core"
	"github.com/zerotal/lock/core/driver"
	"github.com/zerotal/lock/drivers/file"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/sqlite"
)

// Open returns a Manager on the driver cfg names, with cfg's empty fields
// set to their defaults. An unknown driver gives an error matching
// ErrInvalidArgument that names the valid ones; a backend that cannot be
// opened gives a *DriverError.
//
// Every Manager opened with the "memory" driver shares the process-wide lock
// table, so they exclude each other; use New(memory.New()) for a private
// table.
func Open(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d, err := openDriver(cfg)
	if err != nil {
		return nil, err
	}
	return &Manager{engine: core.NewManager(d, cfg.Prefix)}, nil
}

// New returns a Manager on a driver of your own, with the prefix
// "zerotal_lock:" unless WithPrefix says otherwise. The Manager owns d: its
// Close closes d. A nil d gives a Manager whose every call fails with an
// error matching ErrInvalidArgument.
func New(d driver.Driver, opts ...ManagerOption) *Manager {
	o := newManagerOptions(opts)
	return &Manager{engine: core.NewManager(d, o.prefix)}
}

// openDriver opens the backend a defaulted, validated cfg names. Each case
// returns a nil interface on failure, never a typed nil pointer.
func openDriver(cfg Config) (driver.Driver, error) {
	switch cfg.Driver {
	case "memory":
		return memory.Shared(), nil
	case "sqlite":
		d, err := sqlite.Open(cfg.SQLite.Path)
		if err != nil {
			return nil, &DriverError{Op: "open sqlite", Err: err}
		}
		return d, nil
	case "redis":
		if cfg.Redis.URL == "" {
			return nil, &InvalidArgumentError{Field: "Config.Redis.URL", Reason: "is empty and REDIS_URL is not set: name the Redis server"}
		}
		d, err := redis.Open(cfg.Redis.URL)
		switch {
		case errors.Is(err, redis.ErrBadURL):
			return nil, &InvalidArgumentError{Field: "Config.Redis.URL", Reason: err.Error()}
		case err != nil:
			return nil, &DriverError{Op: "open redis", Err: err}
		}
		return d, nil
	case "file":
		if cfg.File.Dir == "" {
			return nil, &InvalidArgumentError{Field: "Config.File.Dir", Reason: "is empty and LOCK_FILE_DIR is not set: name the lock directory"}
		}
		d, err := file.Open(cfg.File.Dir)
		if err != nil {
			return nil, &DriverError{Op: "open file", Err: err}
		}
		return d, nil
	}
	// validate accepts exactly configDriverValues, so only a value added to
	// the spec without a case here gets this far.
	return nil, fmt.Errorf("lock: driver %q is in the spec but Open does not know it", cfg.Driver)
}
