package testport

import "testing"

func TestFreeIsBelowTheEphemeralRange(t *testing.T) {
	low := EphemeralLow()
	below := low-Lowest >= 1000 // else Free takes the kernel's choice
	for range 50 {
		port, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if below && (port < Lowest || port >= low) {
			t.Fatalf("Free = %d, want a port in [%d, %d)", port, Lowest, low)
		}
	}
}
