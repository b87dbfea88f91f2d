package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStatusJSONDescribesTheHolder(t *testing.T) {
	h := newHarness(t)
	before := time.Now()
	holder, id, release := h.startHolder("deploy", "--ttl", "1m")
	defer release()

	r := h.mustRun(0, "status", "deploy", "--json", "idle") // flags may follow keys
	var report statusReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, r.stdout)
	}
	if len(report.Locks) != 2 {
		t.Fatalf("%d locks, want 2 in the order asked:\n%s", len(report.Locks), r.stdout)
	}
	held, free := report.Locks[0], report.Locks[1]
	host, _ := os.Hostname()
	switch {
	case held.Key != "deploy" || !held.Held:
		t.Errorf("first lock %+v, want deploy, held", held)
	case held.PID != holder.cmd.Process.Pid:
		t.Errorf("pid %d, want the holding lockctl's %d", held.PID, holder.cmd.Process.Pid)
	case held.Owner != id.owner:
		t.Errorf("owner %q, want the command's LOCK_OWNER %q", held.Owner, id.owner)
	case held.Token == 0 || held.Token != id.token:
		t.Errorf("token %d, want the command's LOCK_TOKEN %d (> 0)", held.Token, id.token)
	case held.Host != host:
		t.Errorf("host %q, want %q", held.Host, host)
	case held.AcquiredAt.Before(before.Add(-time.Second)) || held.AcquiredAt.After(time.Now()):
		t.Errorf("acquired_at %v, want between %v and now", held.AcquiredAt, before)
	case !held.ExpiresAt.After(held.AcquiredAt):
		t.Errorf("expires_at %v not after acquired_at %v", held.ExpiresAt, held.AcquiredAt)
	case held.ExpiresInMS == nil || *held.ExpiresInMS <= 0 || *held.ExpiresInMS > time.Minute.Milliseconds():
		t.Errorf("expires_in_ms %v, want within the 1m TTL", held.ExpiresInMS)
	}
	if free.Key != "idle" || free.Held {
		t.Errorf("second lock %+v, want idle, free", free)
	}

	// The schema, field by field: scripts depend on these names.
	var raw struct {
		Locks []map[string]json.RawMessage `json:"locks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(raw.Locks[0]), []string{"acquired_at", "expires_at", "expires_in_ms", "held", "host", "key", "owner", "pid", "token"}; !slices.Equal(got, want) {
		t.Errorf("held lock has fields %v, want %v", got, want)
	}
	if got, want := sortedKeys(raw.Locks[1]), []string{"held", "key"}; !slices.Equal(got, want) {
		t.Errorf("free lock has fields %v, want %v", got, want)
	}
	var at string
	if err := json.Unmarshal(raw.Locks[0]["acquired_at"], &at); err != nil || !strings.HasSuffix(at, "Z") {
		t.Errorf("acquired_at %s, want an RFC 3339 time in UTC", raw.Locks[0]["acquired_at"])
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestStatusTable(t *testing.T) {
	h := newHarness(t)
	holder, id, release := h.startHolder("deploy")
	defer release()
	r := h.mustRun(0, "status", "deploy", "idle key")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 3 || !strings.HasPrefix(rows[0], "KEY ") {
		t.Fatalf("status printed\n%s\nwant a header and one row per key", r.stdout)
	}
	heldRow := regexp.MustCompile(`^deploy +held +` + strconv.Itoa(holder.cmd.Process.Pid) + ` +\S+ +` + strconv.FormatUint(id.token, 10) + ` +.+ +in \S+ +` + id.owner + `$`)
	if !heldRow.MatchString(rows[1]) {
		t.Errorf("row %q, want deploy held by pid %d with token %d and owner %s", rows[1], holder.cmd.Process.Pid, id.token, id.owner)
	}
	if !regexp.MustCompile(`^"idle key" +free`).MatchString(rows[2]) {
		t.Errorf("row %q, want the quoted key, free", rows[2])
	}
}

func TestReleaseNeedsForce(t *testing.T) {
	h := newHarness(t)
	_, _, release := h.startHolder("k")
	defer release()
	r := h.run("release", "k")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--force") {
		t.Errorf("release without --force: exit %d, stderr %q; want %d naming --force", r.code, r.stderr, exitUsage)
	}
	if s := h.status(nil, "k"); !s.Locks[0].Held {
		t.Error("release without --force freed the key")
	}
	r = h.mustRun(0, "release", "--force", "k", "free-key")
	if !strings.Contains(r.stdout, `"free-key" was already free`) {
		t.Errorf("release output %q, want a word on the free key", r.stdout)
	}
	if s := h.status(nil, "k"); s.Locks[0].Held {
		t.Error("release --force left the key held")
	}
}

// Strings from the backend reach the terminal quoted: whoever can write to a
// shared Redis or lock database chooses them.
func TestStatusTableQuotesWhatTheBackendHolds(t *testing.T) {
	hostile := []string{
		"\x1b]0;pwned\x07",      // OSC: set the window title
		"\x1b[2J",               // clear the screen
		"key\u009b31m",          // C1 CSI: colours
		"\u202egnp.exe",         // a right-to-left override disguising a name
		"two\nlines",            // a fake second row
		"tab\there",             // a fake column
		"nul\x00byte",           // cut short by some terminals
		"zero\u200bwidth space", // invisible
	}
	report := statusReport{}
	for _, s := range hostile {
		left := int64(1000)
		report.Locks = append(report.Locks, lockStatus{Key: s, Held: true, Owner: s, Host: s, PID: 7, ExpiresInMS: &left})
	}
	var out strings.Builder
	if err := writeStatusTable(&out, report, time.Now()); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, bad := range []string{"\x1b", "\u009b", "\u202e", "\x07", "\x00", "\u200b", "\t", "two\nlines"} {
		if strings.Contains(table, bad) {
			t.Errorf("the table shows %q raw:\n%s", bad, table)
		}
	}
	if lines := strings.Count(table, "\n"); lines != len(hostile)+1 {
		t.Errorf("the table has %d lines for %d locks and a header:\n%s", lines, len(hostile), table)
	}
	if text := holderText(driverHolder("\x1b[2J"), time.Now()); strings.Contains(text, "\x1b") {
		t.Errorf("holderText shows an escape raw: %q", text)
	}
}
