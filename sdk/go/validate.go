package lock

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zerotal/lock/driver"
)

// maxKeyLen is the longest key a caller may use: 1 KiB, whatever the prefix.
const maxKeyLen = 1024

// maxPrefixLen is the longest key prefix a manager may use. Together they
// make up driver.MaxKeyLen, the longest key a driver is ever given.
const maxPrefixLen = driver.MaxKeyLen - maxKeyLen

// validateKey checks a caller's key against the limits every driver relies
// on. The prefix does not count: it was checked once, by validatePrefix.
func validateKey(key string) error {
	switch {
	case key == "":
		return &InvalidArgumentError{Field: "key", Reason: "must not be empty"}
	case len(key) > maxKeyLen:
		return &InvalidArgumentError{Field: "key", Reason: fmt.Sprintf("is %d bytes; the limit is %d", len(key), maxKeyLen)}
	case !utf8.ValidString(key):
		return &InvalidArgumentError{Field: "key", Reason: "must be valid UTF-8"}
	case strings.IndexByte(key, 0) >= 0:
		return &InvalidArgumentError{Field: "key", Reason: "must not contain NUL bytes"}
	}
	return nil
}

// validatePrefix checks a manager's prefix once, so that a bad prefix is
// reported on the first call instead of corrupting keys.
func validatePrefix(prefix string) error {
	switch {
	case len(prefix) > maxPrefixLen:
		return &InvalidArgumentError{Field: "prefix", Reason: fmt.Sprintf("is %d bytes; the limit is %d", len(prefix), maxPrefixLen)}
	case !utf8.ValidString(prefix):
		return &InvalidArgumentError{Field: "prefix", Reason: "must be valid UTF-8"}
	case strings.IndexByte(prefix, 0) >= 0:
		return &InvalidArgumentError{Field: "prefix", Reason: "must not contain NUL bytes"}
	}
	return nil
}

func validateTTL(ttl time.Duration) error {
	switch {
	case ttl < driver.MinTTL:
		return &InvalidArgumentError{Field: "ttl", Reason: fmt.Sprintf("is %v; the minimum is %v", ttl, driver.MinTTL)}
	case ttl > driver.MaxTTL:
		return &InvalidArgumentError{Field: "ttl", Reason: fmt.Sprintf("is %v; the maximum is %v (365 days)", ttl, driver.MaxTTL)}
	}
	return nil
}

func validateCtx(ctx context.Context) error {
	if ctx == nil {
		return &InvalidArgumentError{Field: "ctx", Reason: "must not be nil (use context.Background())"}
	}
	return nil
}
