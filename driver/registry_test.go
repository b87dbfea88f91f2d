package driver_test

import (
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/zerotal/lock/driver"
)

var nothing = driver.OpenerFunc(func(*url.URL) (driver.Driver, error) { return nil, errors.New("not a real driver") })

func TestRegisterByNameAndScheme(t *testing.T) {
	driver.Register("regtest", nothing, "regtest", "RegTest+TLS")
	if _, ok := driver.Lookup("regtest"); !ok {
		t.Fatal("Lookup(regtest) found nothing")
	}
	for _, scheme := range []string{"regtest", "regtest+tls", "REGTEST+tls"} {
		if name, ok := driver.ForScheme(scheme); !ok || name != "regtest" {
			t.Errorf("ForScheme(%q) = %q, %v; want regtest", scheme, name, ok)
		}
	}
	if !slices.Contains(driver.Names(), "regtest") || !slices.Contains(driver.Schemes(), "regtest+tls") {
		t.Errorf("Names() = %v, Schemes() = %v; want regtest and regtest+tls listed", driver.Names(), driver.Schemes())
	}
	if _, ok := driver.ForScheme("regtest2"); ok {
		t.Error("ForScheme found a scheme nobody registered")
	}
}

func TestRegisterWithoutSchemesUsesTheName(t *testing.T) {
	driver.Register("regbare", nothing)
	if name, ok := driver.ForScheme("regbare"); !ok || name != "regbare" {
		t.Errorf("ForScheme(regbare) = %q, %v", name, ok)
	}
}

// Two packages claiming a name or a scheme is a bug in the program, caught
// at init like database/sql's.
func TestRegisterRefusesClaimsTwice(t *testing.T) {
	driver.Register("regfirst", nothing, "regfirst")
	for _, c := range []struct {
		name    string
		schemes []string
	}{
		{"regfirst", []string{"other"}},
		{"regsecond", []string{"REGFIRST"}},
		{"", nil},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, %v) did not panic", c.name, c.schemes)
				}
			}()
			driver.Register(c.name, nothing, c.schemes...)
		}()
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Register with a nil Opener did not panic")
			}
		}()
		driver.Register("regnil", nil)
	}()
}
