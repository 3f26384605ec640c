//go:build goexperiment.simd && amd64

package wire

import "simd/archsimd"

// Built with GOEXPERIMENT=simd (Go 1.26's experimental simd/archsimd), on
// a CPU with AVX2, blocks are read 32 bytes at a time: for each byte
// looked for, each half of a block is compared with it (VPCMPEQB) and the
// results' top bits gathered (VPMOVMSKB), six instructions per block in
// place of some seventy word operations. JSON carried as text is skipped
// about four times faster. The default build (and CI) does without: the
// package is experimental, its API not covered by the Go 1 promise.

var haveAVX2 = archsimd.X86.AVX2()

func stringMasks(b *[blockLen]byte) (quotes, backslashes uint64) {
	if !haveAVX2 {
		return stringMasksSWAR(b)
	}
	lo := archsimd.LoadUint8x32((*[32]uint8)(b[:32]))
	hi := archsimd.LoadUint8x32((*[32]uint8)(b[32:]))
	q, s := archsimd.BroadcastUint8x32('"'), archsimd.BroadcastUint8x32('\\')
	quotes = uint64(lo.Equal(q).ToBits()) | uint64(hi.Equal(q).ToBits())<<32
	backslashes = uint64(lo.Equal(s).ToBits()) | uint64(hi.Equal(s).ToBits())<<32
	return quotes, backslashes
}

func nestedMasks(b *[blockLen]byte) (quotes, backslashes, opens, closes uint64) {
	if !haveAVX2 {
		return nestedMasksSWAR(b)
	}
	lo := archsimd.LoadUint8x32((*[32]uint8)(b[:32]))
	hi := archsimd.LoadUint8x32((*[32]uint8)(b[32:]))
	q, s := archsimd.BroadcastUint8x32('"'), archsimd.BroadcastUint8x32('\\')
	quotes = uint64(lo.Equal(q).ToBits()) | uint64(hi.Equal(q).ToBits())<<32
	backslashes = uint64(lo.Equal(s).ToBits()) | uint64(hi.Equal(s).ToBits())<<32
	// As in nestedMasksSWAR: with the bit 0x20 set, '[' and ']' are '{'
	// and '}', and no other byte is.
	x := archsimd.BroadcastUint8x32(0x20)
	lo, hi = lo.Or(x), hi.Or(x)
	o, c := archsimd.BroadcastUint8x32('{'), archsimd.BroadcastUint8x32('}')
	opens = uint64(lo.Equal(o).ToBits()) | uint64(hi.Equal(o).ToBits())<<32
	closes = uint64(lo.Equal(c).ToBits()) | uint64(hi.Equal(c).ToBits())<<32
	return quotes, backslashes, opens, closes
}
