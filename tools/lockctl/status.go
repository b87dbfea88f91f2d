package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/zerotal/lock/driver"
)

const statusHelp = `Usage: lockctl status [flags] KEY...

Show who holds each KEY: the holder's process and host, its owner token and
fencing token, when it took the lock and when the lock expires unless it is
refreshed. A free key is shown as free. Status only reads: it never takes or
frees a lock.

Flags:
{{flags}}
JSON output (--json), one object; fields may be added, existing ones keep
their meaning:
  {"locks": [
    {"key": "deploy", "held": true,
     "owner": "9f2c…",            32 hex digits
     "token": 7,                  fencing token; absent if the driver has none
     "pid": 4242, "host": "web-1",
     "acquired_at": "2025-06-01T12:03:07.123456789Z",   RFC 3339, UTC
     "expires_at":  "2025-06-01T12:03:37.123456789Z",
     "expires_in_ms": 28000},      from now, by this host's clock
    {"key": "backup", "held": false}
  ]}
The locks are in the order of the KEY arguments. A field the driver does not
record is absent; a free key has only "key" and "held".

Exit status: 0 when every key was looked up (held or free), 64 for a usage
error, 70 when the backend failed, 78 when it cannot be opened or reached.

Examples:
  lockctl status deploy
  lockctl status --json deploy backup | jq '.locks[] | select(.held) | .pid'
  lockctl status --driver redis --redis-url redis://locks.internal:6379 deploy
`

// statusReport is the JSON document of `status --json`. Its shape is part of
// lockctl's interface: scripts parse it.
type statusReport struct {
	Locks []lockStatus `json:"locks"`
}

// lockStatus describes one key. Held is always present; the rest only when
// the key is held and the driver records the field.
type lockStatus struct {
	Key         string    `json:"key"`
	Held        bool      `json:"held"`
	Owner       string    `json:"owner,omitempty"`
	Token       uint64    `json:"token,omitempty"`
	PID         int       `json:"pid,omitempty"`
	Host        string    `json:"host,omitempty"`
	AcquiredAt  time.Time `json:"acquired_at,omitzero"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	ExpiresInMS *int64    `json:"expires_in_ms,omitempty"`
}

func statusCommand(e *env, args []string) error {
	var (
		asJSON  bool
		backend backendFlags
	)
	fs := newFlagSet("status")
	fs.BoolVar(&asJSON, "json", false, "print JSON for scripts (schema below)")
	backend.register(fs)
	keys, err := parseArgs(e.stdout, fs, statusHelp, args, true)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return usageError("status", "missing KEY")
	}
	be, err := backend.resolve("status", e.getenv)
	if err != nil {
		return err
	}
	m, err := be.open()
	if err != nil {
		return err
	}
	defer m.Close()

	report := statusReport{Locks: make([]lockStatus, 0, len(keys))}
	for i, key := range keys {
		// Make needs a TTL; looking at a holder does not use it.
		h, held, known, err := lookupHolder(context.Background(), m.Make(key, time.Second))
		if err != nil {
			return be.failed(err, i == 0, fmt.Sprintf("inspect %q", key))
		}
		if !known {
			return fail(exitConfig, "the %s driver cannot describe who holds a lock", be.cfg.Driver)
		}
		report.Locks = append(report.Locks, newLockStatus(key, h, held, time.Now()))
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return writeStatusTable(e.stdout, report, time.Now())
}

// newLockStatus describes key from what the driver said at now.
func newLockStatus(key string, h driver.Holder, held bool, now time.Time) lockStatus {
	s := lockStatus{Key: key, Held: held}
	if !held {
		return s
	}
	s.Owner, s.Token, s.PID, s.Host = h.Owner, h.Token, h.PID, h.Host
	if !h.AcquiredAt.IsZero() {
		s.AcquiredAt = h.AcquiredAt.UTC()
	}
	if !h.ExpiresAt.IsZero() {
		s.ExpiresAt = h.ExpiresAt.UTC()
		left := max(h.ExpiresAt.Sub(now).Milliseconds(), 0)
		s.ExpiresInMS = &left
	}
	return s
}

// writeStatusTable prints the report as a table for people.
func writeStatusTable(w io.Writer, report statusReport, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATE\tPID\tHOST\tTOKEN\tACQUIRED\tEXPIRES\tOWNER")
	for _, s := range report.Locks {
		state, pid, host, token, acquired, expires, owner := "free", "-", "-", "-", "-", "-", "-"
		if s.Held {
			state = "held"
			if s.PID != 0 {
				pid = strconv.Itoa(s.PID)
			}
			if s.Host != "" {
				host = display(s.Host)
			}
			if s.Token != 0 {
				token = strconv.FormatUint(s.Token, 10)
			}
			if !s.AcquiredAt.IsZero() {
				acquired = clock(s.AcquiredAt, now)
			}
			if s.ExpiresInMS != nil {
				expires = "in " + (time.Duration(*s.ExpiresInMS) * time.Millisecond).Round(100*time.Millisecond).String()
			}
			if s.Owner != "" {
				owner = display(s.Owner)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", display(s.Key), state, pid, host, token, acquired, expires, owner)
	}
	return tw.Flush()
}
