// Package testport picks loopback ports for the private servers that a
// driver's fault tests start, stop and start again: ports that nothing
// else on the machine is handed in between.
//
// The ports lie below the kernel's ephemeral range (ip_local_port_range),
// from Lowest up. A port in that range is what the kernel hands to every
// bind to port 0 and every outgoing connection on the machine, so a server
// restarted on one could find it taken in between by any process; below
// the range only a process that names the port can take it.
package testport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Lowest is the lowest port Free picks: below it lie the well-known and
// registered ports of services a machine may run.
const Lowest = 20000

// Free returns a loopback TCP port below the ephemeral range that was free
// a moment ago; the kernel's choice when the part of the range below it
// leaves fewer than 1000 ports to pick from.
func Free() (int, error) {
	if high := EphemeralLow(); high-Lowest >= 1000 {
		for range 100 {
			port := Lowest + rand.IntN(high-Lowest)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// EphemeralLow is the first port of the kernel's ephemeral range: Linux's
// setting, or 32768, its default, where it cannot be read.
func EphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}
