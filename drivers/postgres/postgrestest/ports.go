package postgrestest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// The ports private servers listen on lie below the kernel's ephemeral
// range (ip_local_port_range), from lowestPort up. A port in that range is
// what the kernel hands to every bind to port 0 and every outgoing
// connection on the machine, so a server stopped and started again on one
// (a restart test) could find it taken in between by any process; below
// the range only a process that names the port can take it.
const lowestPort = 20000

// freePort returns a loopback TCP port below the ephemeral range that was
// free a moment ago; the kernel's choice when that part of the range is
// too small to pick from.
func freePort() (int, error) {
	if high := ephemeralLow(); high-lowestPort >= 1000 {
		for range 100 {
			port := lowestPort + rand.IntN(high-lowestPort)
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

// ephemeralLow is the first port of the kernel's ephemeral range: Linux's
// setting, or 32768, its default, where it cannot be read.
func ephemeralLow() int {
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
