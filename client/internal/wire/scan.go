package wire

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// This file is the jsonScanner's hot loop: skipping what the guard does not
// read, the contents of strings and the nested objects and arrays of an
// answer, which are almost all of its bytes. It must stay linear, and
// cheap, on any bytes: JSON carried as text escapes every quote of its own
// (one escape every few bytes), and structured content is brackets and
// short strings throughout.
//
// Where quotes are few, bytes.IndexByte (vectorized by the runtime) finds
// the next one, and the run of backslashes before it tells whether it is
// escaped. Strings where they are dense, and nested values, are read by
// 64-byte blocks: eight bytes at a time (32 with GOEXPERIMENT=simd, see
// scan_simd.go) into bitmasks, one bit per byte, of quotes, backslashes
// and brackets, from which the escapes, strings and depth of the whole
// block are worked out with a few word operations, as simdjson's first
// stage does (Langdale and Lemire, "Parsing Gigabytes of JSON per
// Second", 2019). That is some 3 instructions a byte in a string and 6 in
// a nested value, none a branch: 0.25 and 0.55 ns a byte here
// (BENCHMARKS.md), where a byte at a time, or an IndexByte call per
// escaped quote, took 1.1 to 1.5. Bytes at the end of a read too few for
// a block go one at a time. State carried from one read to the
// next (in a string, after a backslash, how deep) is what the
// byte-at-a-time loop keeps, so a read may end anywhere.

const (
	blockLen = 64 // bytes per block: one bit each in a uint64

	ones8 = 0x0101010101010101 // times a byte: the byte in every byte of a word
	high8 = 0x8080808080808080
	low7  = 0x7f7f7f7f7f7f7f7f
	// gather moves the high bits of a word's eight bytes into its top
	// byte, byte i's to bit 56+i: bit 8i+7 times 2^(7(7-i)) lands there,
	// and no two products overlap, so nothing carries.
	gather = 0x0002040810204081

	oddBits = 0xaaaaaaaaaaaaaaaa // the bits of a block's odd bytes
)

// notByte has in its top byte a bit for each byte of the word x that is
// not c, an ASCII byte: bit 56+i for x's byte i (little endian). low is
// x&low7. Its other bytes are garbage.
func notByte(x, low uint64, c byte) uint64 {
	// Adding 0x7f to a byte's low seven bits, XORed with c's, sets its
	// high bit unless they were c's, and carries into no other byte; the
	// OR sets it for a byte over 0x7f. The bytes left without it are c.
	t := ((low ^ ones8*uint64(c)) + low7) | x
	return (t & high8) * gather
}

// The masks of a block are built a word at a time, from its first word
// to its last: each word's bits go on top of the masks shifted down a
// byte. They are built inverted (the bytes that are not quotes...), which
// saves an operation per word. The calls are unrolled: a loop, with its
// variable shift, costs a fifth more.

// stringMasksSWAR reads a block for stringEnd: its quotes and
// backslashes. (stringMasks is this, or the same with SIMD instructions.)
func stringMasksSWAR(b *[blockLen]byte) (quotes, backslashes uint64) {
	var q, s uint64
	q, s = pairWord(q, s, word(b, 0), '"', '\\')
	q, s = pairWord(q, s, word(b, 8), '"', '\\')
	q, s = pairWord(q, s, word(b, 16), '"', '\\')
	q, s = pairWord(q, s, word(b, 24), '"', '\\')
	q, s = pairWord(q, s, word(b, 32), '"', '\\')
	q, s = pairWord(q, s, word(b, 40), '"', '\\')
	q, s = pairWord(q, s, word(b, 48), '"', '\\')
	q, s = pairWord(q, s, word(b, 56), '"', '\\')
	return ^q, ^s
}

// nestedMasksSWAR reads a block for nested: its quotes, backslashes,
// opening brackets ('{', '[') and closing ones ('}', ']'). (nestedMasks is
// this, or the same with SIMD instructions.)
func nestedMasksSWAR(b *[blockLen]byte) (quotes, backslashes, opens, closes uint64) {
	var q, s, o, c uint64
	q, s = pairWord(q, s, word(b, 0), '"', '\\')
	o, c = pairWord(o, c, word(b, 0)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 8), '"', '\\')
	o, c = pairWord(o, c, word(b, 8)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 16), '"', '\\')
	o, c = pairWord(o, c, word(b, 16)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 24), '"', '\\')
	o, c = pairWord(o, c, word(b, 24)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 32), '"', '\\')
	o, c = pairWord(o, c, word(b, 32)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 40), '"', '\\')
	o, c = pairWord(o, c, word(b, 40)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 48), '"', '\\')
	o, c = pairWord(o, c, word(b, 48)|brackets, '{', '}')
	q, s = pairWord(q, s, word(b, 56), '"', '\\')
	o, c = pairWord(o, c, word(b, 56)|brackets, '{', '}')
	return ^q, ^s, ^o, ^c
}

// brackets, ORed into every byte, makes '[' and ']' '{' and '}', which no
// other bytes become.
const brackets = ones8 * 0x20

// word is the k-th to k+7-th bytes of a block, little endian.
func word(b *[blockLen]byte, k int) uint64 { return binary.LittleEndian.Uint64(b[k : k+8]) }

// pairWord adds the bytes of the word x that are not c1 and not c2 on top
// of the inverted masks m1 and m2.
func pairWord(m1, m2, x uint64, c1, c2 byte) (uint64, uint64) {
	const top = 0xff << 56
	low := x & low7
	return m1>>8 | notByte(x, low, c1)&top, m2>>8 | notByte(x, low, c2)&top
}

// escapedBytes returns the mask of a block's bytes that are escaped: the
// byte after an odd run of backslashes, and the second, fourth... of a
// run. carry (0 or 1) says the block's first byte is escaped by the last
// block; carryOut, the same of the next block's.
//
// This is simdjson's method. The backslashes that can escape (all but
// one carried in) are p. For each run of them, from bit s to bit e,
// (p<<1 | oddBits) - p leaves bit e+1 set, and the run's own bits
// cleared, if s is odd; if s is even, it borrows through the run, leaving
// its bits set and bit e+1 cleared. XORed with oddBits, that marks the
// run's bits s, s+2, s+4... (the backslashes that escape) and bit e+1
// exactly when e+1-s, the run's length, is odd. Between runs, nothing
// borrows.
func escapedBytes(backslashes, carry uint64) (escaped, carryOut uint64) {
	p := backslashes &^ carry
	t := ((p<<1 | oddBits) - p) ^ oddBits
	// t's backslashes escape; the others are escaped, as are t's other
	// bits (the bytes after odd runs) and a first byte escaped by carry.
	return t ^ (backslashes | carry), (t & backslashes) >> 63
}

// prefixXOR sets each bit of x to the XOR of it and the bits below it: of
// a mask of quotes, the bytes from each opening quote to its closing one,
// that one excluded.
func prefixXOR(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}

// stringEnd finds the quote that ends a JSON string in p, which begins
// inside the string; escaped says p[0] is escaped (the bytes before p ended
// in an unpaired backslash). It returns the quote's index, or -1 and
// whether p ends in an unpaired backslash.
//
// It looks for the next quote with IndexByte, and decides whether it is
// escaped by the run of backslashes just before it: an odd run escapes it.
// After an escaped quote, it goes on by blocks, which find every quote
// and escape of 64 bytes at once, until it meets a block without a quote.
// Every byte is looked at a bounded number of times either way, so the
// scan is linear.
func stringEnd(p []byte, escaped bool) (end int, escapedAfter bool) {
	i := 0
	for {
		if escaped {
			if i == len(p) {
				return -1, true
			}
			i++
		}
		q := bytes.IndexByte(p[i:], '"')
		if q < 0 {
			return -1, oddBackslashes(p[i:])
		}
		q += i
		// p[i-1], if any, is not a backslash that escapes: the run before
		// q starts at i at the earliest.
		if !oddBackslashes(p[i:q]) {
			return q, false
		}
		// An escaped quote: JSON carried as text, most likely, with one
		// every few bytes, each an IndexByte call.
		i = q + 1
		var carry uint64
		for len(p)-i >= blockLen {
			quotes, backslashes := stringMasks((*[blockLen]byte)(p[i:]))
			esc, next := escapedBytes(backslashes, carry)
			if ends := quotes &^ esc; ends != 0 {
				return i + bits.TrailingZeros64(ends), false
			}
			i, carry = i+blockLen, next
			if quotes == 0 {
				break // quotes are sparse again
			}
		}
		escaped = carry != 0
	}
}

// oddBackslashes reports whether p ends in an odd run of backslashes: the
// last one escapes what follows p.
func oddBackslashes(p []byte) bool {
	n := 0
	for i := len(p) - 1; i >= 0 && p[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// nested skips through an object or array value from p[i], and returns the
// index of the last byte it consumed: the bracket that closes the value,
// or p's last byte. It reads by blocks while a block is left, a long
// string with stringEnd, and the rest a byte at a time.
func (s *jsonScanner) nested(p []byte, i int) int {
	bytewise := 0 // p[:bytewise] is read a byte at a time
	for i < len(p) {
		if s.str {
			j, esc := stringEnd(p[i:], s.esc)
			if j < 0 {
				s.esc = esc
				return len(p) - 1
			}
			i += j + 1
			s.str, s.esc = false, false
			continue
		}
		if i >= bytewise && len(p)-i >= blockLen {
			n, how := s.nestedBlocks(p[i:])
			switch how {
			case blocksEnded:
				s.endValue()
				s.phase = phAfter
				return i + n
			case blocksNotJSON:
				bytewise = i + n + blockLen
			}
			i += n
			continue
		}
		switch p[i] {
		case '"':
			s.str = true
		case '{', '[':
			s.depth++
		case '}', ']':
			if s.depth--; s.depth == 0 {
				s.endValue()
				s.phase = phAfter
				return i
			}
		}
		i++
	}
	return len(p) - 1
}

// How nestedBlocks stopped.
const (
	blocksMore    = iota // p has less than a block left, or a string to skip
	blocksEnded          // the value ended
	blocksNotJSON        // the next block is not JSON: read it a byte at a time
)

// nestedBlocks skips p, which begins in a nested value outside its
// strings, by blocks. It returns how many bytes it consumed, or the index
// of the bracket that ends the value.
func (s *jsonScanner) nestedBlocks(p []byte) (n int, how int) {
	depth := int(s.depth)
	var inString, carry uint64 // in a string at the block's start: all ones
	for ; len(p)-n >= blockLen; n += blockLen {
		quotes, backslashes, opens, closes := nestedMasks((*[blockLen]byte)(p[n:]))
		esc, next := escapedBytes(backslashes, carry)
		strs := prefixXOR(quotes&^esc) ^ inString
		if backslashes&^strs != 0 {
			// A backslash outside a string, which escapes nothing there:
			// the masks, which take every backslash for an escape, may be
			// wrong from it on. Up to it they are right, so the first one
			// shows here. It is not JSON (mcp-go fails on it too), but the
			// byte loop reads it as it always has.
			s.str, s.esc, s.depth = inString != 0, carry != 0, int32(depth)
			return n, blocksNotJSON
		}
		opens &^= strs
		closes &^= strs
		if c := bits.OnesCount64(closes); c < depth {
			depth += bits.OnesCount64(opens) - c // the value goes on
		} else {
			// It may end here: follow the brackets in order.
			for m := opens | closes; m != 0; m &= m - 1 {
				if opens&(m&-m) != 0 {
					depth++
				} else if depth--; depth == 0 {
					s.str, s.esc, s.depth = false, false, 0
					return n + bits.TrailingZeros64(m), blocksEnded
				}
			}
		}
		inString, carry = -(strs >> 63), next
		if strs == ^uint64(0) {
			// A block all string: a long one, which stringEnd skips
			// faster.
			n += blockLen
			break
		}
	}
	s.str, s.esc, s.depth = inString != 0, carry != 0, int32(depth)
	return n, blocksMore
}
