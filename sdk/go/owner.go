package lock

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// ownerBytes is the size of an owner token in bytes: 128 random bits.
const ownerBytes = 16

// ownerPool amortises crypto/rand over many tokens: one read fills a buffer
// of 256 tokens. The bytes are still crypto/rand output, used once each; only
// the system call is shared.
var ownerPool = struct {
	sync.Mutex
	buf [256 * ownerBytes]byte
	off int
}{off: 256 * ownerBytes}

// newOwner returns a fresh owner token: 32 lowercase hex digits.
func newOwner() string {
	var raw [ownerBytes]byte
	p := &ownerPool
	p.Lock()
	if p.off == len(p.buf) {
		// crypto/rand.Read never fails on supported platforms (Go 1.24+
		// crashes the program instead of returning an error).
		_, _ = rand.Read(p.buf[:])
		p.off = 0
	}
	copy(raw[:], p.buf[p.off:p.off+ownerBytes])
	clear(p.buf[p.off : p.off+ownerBytes]) // a token is never handed out twice
	p.off += ownerBytes
	p.Unlock()
	var out [2 * ownerBytes]byte
	hex.Encode(out[:], raw[:])
	return string(out[:])
}
