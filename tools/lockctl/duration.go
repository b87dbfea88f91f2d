package main

import (
	"flag"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// durationValue is a flag.Value for a duration given as a Go duration
// (90s, 10m, 1h30m) or, as flock(1) and timeout(1) take them, as bare
// seconds (60, 2.5): cron lines are written by people who know those tools.
type durationValue time.Duration

// bareSeconds is a number of seconds: digits with an optional fraction.
// Exponents, signs and hexadecimal are left to the error, which names the
// accepted forms.
var bareSeconds = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func (d *durationValue) String() string { return time.Duration(*d).String() }

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// parseDuration reads seconds or a Go duration, and refuses what does not
// fit a time.Duration rather than wrapping it.
func parseDuration(s string) (time.Duration, error) {
	if bareSeconds.MatchString(s) {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || secs*float64(time.Second) >= math.MaxInt64 {
			return 0, fmt.Errorf("%s seconds is too long", s)
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want seconds (60, 2.5) or a duration with a unit (90s, 10m, 1h30m, 500ms)")
	}
	return v, nil
}

// durationVar defines a duration flag that also accepts bare seconds.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}
