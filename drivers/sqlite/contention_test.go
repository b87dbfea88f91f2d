package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hammer is the "hammer" child: it takes one key count times, each time
// proving in the shared marker file that nobody else is inside, appending its
// token to the shared log, and releasing. Any error, SQLITE_BUSY included,
// fails the child.
func hammer() error {
	count, err := strconv.Atoi(os.Getenv(childCountEnv))
	if err != nil {
		return err
	}
	key, mark := os.Getenv(childKeyEnv), os.Getenv(childMarkEnv)
	logFile, err := os.OpenFile(os.Getenv(childLogEnv), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Every child opens the (new) database at once: schema creation races.
	d, err := Open(os.Getenv(childDBEnv))
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := range count {
		owner := fmt.Sprintf("%016x%016x", os.Getpid(), i)
		token, err := acquirePolling(ctx, d, key, owner)
		if err != nil {
			return fmt.Errorf("acquisition %d: %w", i, err)
		}
		if err := criticalSection(mark, logFile, token); err != nil {
			return err
		}
		ok, err := d.Release(ctx, key, owner)
		if err != nil || !ok {
			return fmt.Errorf("release %d = %v, %v", i, ok, err)
		}
	}
	return nil
}

// acquirePolling retries AcquireFenced with a short jittered pause, the way
// the engine waits for a key held by another process.
func acquirePolling(ctx context.Context, d *Driver, key, owner string) (uint64, error) {
	for {
		// The TTL is far longer than the test, so only a release frees the key.
		token, ok, err := d.AcquireFenced(ctx, key, owner, time.Hour)
		if err != nil || ok {
			return token, err
		}
		t := time.NewTimer(time.Duration(200+rand.IntN(800)) * time.Microsecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// criticalSection creates the marker exclusively (failing if another holder
// is inside), logs token and removes the marker.
func criticalSection(mark string, log *os.File, token uint64) error {
	f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) {
		_, err = fmt.Fprintf(log, "overlap %d\n", token)
		return err
	}
	if err != nil {
		return err
	}
	_ = f.Close()
	if _, err := fmt.Fprintf(log, "token %d\n", token); err != nil {
		return err
	}
	return os.Remove(mark)
}

func TestSixteenProcessesOnOneKey(t *testing.T) {
	const processes, each = 16, 25
	dir := t.TempDir()
	logPath := filepath.Join(dir, "sections.log")
	if err := os.WriteFile(logPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		childDBEnv + "=" + filepath.Join(dir, "locks.db"),
		childKeyEnv + "=hot",
		childCountEnv + "=" + strconv.Itoa(each),
		childLogEnv + "=" + logPath,
		childMarkEnv + "=" + filepath.Join(dir, "inside"),
	}
	var wg sync.WaitGroup
	failures := make([]string, processes)
	for i := range processes {
		cmd := childCommand(t, "hammer", env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				failures[i] = fmt.Sprintf("child %d: %v: %s", i, err, stderr.String())
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		if f != "" {
			t.Error(f)
		}
	}

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != processes*each {
		t.Fatalf("%d critical sections logged; want %d", len(lines), processes*each)
	}
	var last uint64
	for i, line := range lines {
		var token uint64
		if _, err := fmt.Sscanf(line, "token %d", &token); err != nil {
			t.Fatalf("section %d: %q (overlapping critical sections)", i, line)
		}
		// Sections are logged inside the lock, so log order is lock order
		// and fencing tokens must rise strictly along it.
		if token <= last {
			t.Fatalf("section %d: token %d after %d", i, token, last)
		}
		last = token
	}
}
