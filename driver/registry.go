package driver

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// An Opener makes a Driver from a URL. A driver package registers one, under
// its name and the URL schemes it opens, so that lock.Open (and lockctl, the
// C ABI and every runtime over it) can reach the driver by name or by URL
// without importing its package: a program links only the drivers it
// imports.
type Opener interface {
	// OpenURL returns a driver for u, whose scheme is one this Opener was
	// registered for. A URL it cannot use gives an error wrapping
	// [ErrBadURL] that says which part is wrong and never contains a
	// password; a backend that cannot be set up gives any other error. It
	// should not wait for the backend: an unreachable server makes the
	// first call fail, not Open.
	OpenURL(u *url.URL) (Driver, error)
}

// OpenerFunc is a function that is an Opener.
type OpenerFunc func(u *url.URL) (Driver, error)

// OpenURL returns f(u).
func (f OpenerFunc) OpenURL(u *url.URL) (Driver, error) { return f(u) }

// ErrBadURL is wrapped by every error an Opener returns for a URL it cannot
// use (an unknown query parameter, a missing host, a bad value), as opposed
// to a backend that failed. The engine reports it as an invalid argument.
var ErrBadURL = errors.New("bad URL")

var registry struct {
	sync.RWMutex
	byName   map[string]Opener
	byScheme map[string]string // scheme → driver name
}

// Register makes a driver available under name and under each of its URL
// schemes (name itself when there are none). Drivers call it from an init
// function. Like database/sql.Register, it panics if o is nil or a name or
// scheme is taken already: two packages claiming one is a mistake in the
// program, not a condition to handle at run time.
func Register(name string, o Opener, schemes ...string) {
	if o == nil {
		panic("driver: Register of " + name + " with a nil Opener")
	}
	if len(schemes) == 0 {
		schemes = []string{name}
	}
	schemes = slices.Clone(schemes)
	registry.Lock()
	defer registry.Unlock()
	if registry.byName == nil {
		registry.byName, registry.byScheme = map[string]Opener{}, map[string]string{}
	}
	if name == "" || registry.byName[name] != nil {
		panic(fmt.Sprintf("driver: Register called twice for driver %q", name))
	}
	for i, s := range schemes {
		s = strings.ToLower(s)
		schemes[i] = s
		if s == "" || registry.byScheme[s] != "" {
			panic(fmt.Sprintf("driver: Register of %q claims URL scheme %q, which %q has", name, s, registry.byScheme[s]))
		}
	}
	registry.byName[name] = o
	for _, s := range schemes {
		registry.byScheme[s] = name
	}
}

// Lookup returns the Opener registered under name.
func Lookup(name string) (Opener, bool) {
	registry.RLock()
	defer registry.RUnlock()
	o, ok := registry.byName[name]
	return o, ok
}

// ForScheme returns the name of the driver registered for a URL scheme
// (case-insensitive), and false when there is none.
func ForScheme(scheme string) (string, bool) {
	registry.RLock()
	defer registry.RUnlock()
	name, ok := registry.byScheme[strings.ToLower(scheme)]
	return name, ok
}

// Names returns the names of the registered drivers, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.byName))
	for name := range registry.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Schemes returns the URL schemes of the registered drivers, sorted.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	schemes := make([]string, 0, len(registry.byScheme))
	for s := range registry.byScheme {
		schemes = append(schemes, s)
	}
	slices.Sort(schemes)
	return schemes
}
