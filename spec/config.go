package spec

// Config selects and configures the driver behind a Manager made by Open.
// Its zero value is valid: every empty field takes its default, so Config{}
// opens the process-wide memory driver with the prefix "zerotal_lock:".
// ConfigFromEnv reads it from the environment.
//
//lock:config
type Config struct {
	// URL names the driver by its scheme and configures it with the rest:
	// "memory:", "sqlite:///var/lib/app/locks.db" (or "sqlite:locks.db",
	// relative), "file:///var/lock/app", "redis://host:6379/0" ("rediss://"
	// for TLS, "unix:///path/redis.sock"), "redis+sentinel://" and
	// "redis+cluster://" with several nodes, "postgres://" and "etcd://".
	// Each driver's documentation gives its URL's form and parameters;
	// unknown parameters are refused, and no error repeats a password. When
	// URL is set it wins over Driver and the per-driver fields.
	URL string `env:"LOCK_URL" json:"url"`

	// Driver names the backend when URL is empty: "memory" (one lock table
	// per process, shared by every Manager of the process), "sqlite" (one
	// host, across processes), "redis" (across hosts), "file" (a lock
	// directory, across the processes that share it), or any other driver a
	// package registered (driver.Register), such as "postgres" or "etcd". A
	// driver is available once its package is imported; "memory" always is.
	Driver string `default:"memory" env:"LOCK_DRIVER" json:"driver"`

	// Prefix is prepended to every key at the driver boundary, so that
	// several applications can share one backend. An empty Prefix means the
	// default; use New with WithPrefix("") for no prefix at all. A prefix is
	// at most 256 bytes, and does not count against a key's 1 KiB.
	Prefix string `default:"zerotal_lock:" env:"LOCK_PREFIX" json:"prefix"`

	// SQLite configures the "sqlite" driver.
	SQLite SQLiteConfig `json:"sqlite"`

	// Redis configures the "redis" driver.
	Redis RedisConfig `json:"redis"`

	// File configures the "file" driver.
	File FileConfig `json:"file"`
}

// SQLiteConfig configures the "sqlite" driver.
//
//lock:config
type SQLiteConfig struct {
	// Path is the database file. ":memory:" keeps the locks private to one
	// process, like the memory driver; point it at a file to coordinate the
	// processes of one host.
	Path string `default:":memory:" env:"LOCK_SQLITE_PATH" json:"path"`
}

// RedisConfig configures the "redis" driver.
//
//lock:config
type RedisConfig struct {
	// URL is the server's address, for example "redis://127.0.0.1:6379/0".
	// An empty URL means the value of REDIS_URL when Open runs.
	URL string `default:"$REDIS_URL" env:"REDIS_URL" json:"url"`
}

// FileConfig configures the "file" driver.
//
//lock:config
type FileConfig struct {
	// Dir is the lock directory, created if missing. Every process that
	// shares it excludes the others; it must be set to use the "file" driver.
	Dir string `env:"LOCK_FILE_DIR" json:"dir"`
}
