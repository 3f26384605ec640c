package wire

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The scanner's fast skips (scan.go) are held to byte-at-a-time references
// that are correct by inspection, on inputs built to put backslash runs of
// every length up to two blocks across the edges of 64-byte blocks, and
// runs of the lengths around a word's and a block's at every place, and on
// random ones; cut into reads at every place.

// refEscaped is escapedBytes one bit at a time.
func refEscaped(backslashes, carry uint64) (escaped, carryOut uint64) {
	esc := carry != 0
	for i := range 64 {
		switch {
		case esc:
			escaped |= 1 << i
			esc = false
		case backslashes&(1<<i) != 0:
			esc = true
		}
	}
	if esc {
		carryOut = 1
	}
	return escaped, carryOut
}

func TestEscapedBytes(t *testing.T) {
	check := func(b, carry uint64) {
		t.Helper()
		e, c := escapedBytes(b, carry)
		we, wc := refEscaped(b, carry)
		if e != we || c != wc {
			t.Fatalf("escapedBytes(%064b, %d) = %064b, %d; want %064b, %d", b, carry, e, c, we, wc)
		}
	}
	for carry := range uint64(2) {
		// Every run, and every pair of runs around a gap of one or two.
		for s := range 64 {
			for n := 1; s+n <= 64; n++ {
				run := (^uint64(0) >> (64 - n)) << s
				check(run, carry)
				check(run|run<<(n+1), carry)
				check(run|run<<(n+2), carry)
				check(^run, carry)
			}
		}
		r := rand.New(rand.NewPCG(1, carry))
		for range 100000 {
			// Dense masks: long runs.
			check(r.Uint64()|r.Uint64(), carry)
			check(r.Uint64()&r.Uint64(), carry)
		}
	}
}

func TestNotByte(t *testing.T) {
	for _, c := range []byte{'"', '\\', '{', '}'} {
		for v := range 256 {
			for pos := range 8 {
				var b [8]byte
				for i := range b {
					b[i] = byte(v + 13*i) // other bytes around
					if b[i] == c {
						b[i]++
					}
				}
				b[pos] = byte(v)
				x := uint64(0)
				for i := range b {
					x |= uint64(b[i]) << (8 * i)
				}
				want := uint64(0)
				if byte(v) == c {
					want = 1 << pos
				}
				if got := ^notByte(x, x&low7, c) >> 56; got != want {
					t.Fatalf("notByte(% x, %q) = %08b, want %08b", b, c, got, want)
				}
			}
		}
	}
}

// The masks of blocks of bytes that are, or are near (a bit apart, or
// over 0x7f), those looked for.
func TestMasks(t *testing.T) {
	const alphabet = "\"\\{}[]\x22\x5c\x7b\x7d\x5b\x5d\xa2\xdc\xfb\xfd\xdb\xdd\x02\x1c\x23\x5e\x3b\x7f\x80\xffa "
	r := rand.New(rand.NewPCG(6, 7))
	var b [blockLen]byte
	for range 20000 {
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		var want [4]uint64
		for i, c := range b {
			for k, set := range [4]string{`"`, `\`, "{[", "}]"} {
				if strings.IndexByte(set, c) >= 0 {
					want[k] |= 1 << i
				}
			}
		}
		q, s := stringMasks(&b)
		nq, ns, o, c := nestedMasks(&b)
		if got := [4]uint64{q, s, want[2], want[3]}; got != want {
			t.Fatalf("stringMasks(%q) = %064b, %064b; want %064b, %064b", b, q, s, want[0], want[1])
		}
		if got := [4]uint64{nq, ns, o, c}; got != want {
			t.Fatalf("nestedMasks(%q) = %064b; want %064b", b, got, want)
		}
	}
}

// refStringEnd is stringEnd a byte at a time.
func refStringEnd(p []byte, escaped bool) (int, bool) {
	for i, c := range p {
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			return i, false
		}
	}
	return -1, escaped
}

// stringEndInReads runs stringEnd over p cut into reads at cuts, carrying
// the escape from one to the next, as the scanner does.
func stringEndInReads(p []byte, escaped bool, cuts []int) (int, bool) {
	from := 0
	for _, to := range append(cuts, len(p)) {
		j, esc := stringEnd(p[from:to], escaped)
		if j >= 0 {
			return from + j, false
		}
		from, escaped = to, esc
	}
	return -1, escaped
}

// stringInputs are strings' contents (and what follows them) for the
// tests. A run of backslashes of every length up to past two blocks ends
// at every place around the edges of the first two blocks, before a
// quote or another byte; and runs of the lengths around a word's and a
// block's are put at every place. Before them, an escaped quote sends
// stringEnd from IndexByte to blocks, and the bytes up to the run are
// escaped quotes (so it stays in blocks) or plain (so it goes back to
// IndexByte, maybe in the middle of the run); or nothing does, and
// IndexByte finds the end. Then random strings, their quotes mostly
// escaped.
func stringInputs() [][]byte {
	var in [][]byte
	type fill struct{ lead, unit string }
	add := func(f fill, at, n int) {
		// f.lead, at bytes of f.unit, n backslashes, and a quote or not.
		fill := f.lead + strings.Repeat(f.unit, at/len(f.unit)) + "xx"[:at%len(f.unit)]
		for _, after := range []string{`"tail`, `x"`, `\"" `} {
			in = append(in, []byte(fill+strings.Repeat(`\`, n)+after+"yyyyyyyy"))
		}
	}
	for _, f := range []fill{{"", "x"}, {`\"`, `x\"`}, {`\"`, "x"}} {
		for n := 0; n <= 2*blockLen+2; n++ {
			add(f, 0, n)
			// Blocks start after lead.
			for _, end := range []int{blockLen, 2 * blockLen} {
				for d := -2; d <= 2; d++ {
					if at := end + d - n; at > 0 {
						add(f, at, n)
					}
				}
			}
		}
		for at := 1; at <= 2*blockLen+2; at++ {
			for _, n := range []int{1, 2, 3, 7, 8, 9, 63, 64, 65} {
				add(f, at, n)
			}
		}
	}
	r := rand.New(rand.NewPCG(2, 3))
	tokens := []string{`\"`, `\"`, `\"`, `\\`, `\\`, `\`, `\`, "a", "a", "a"}
	for range 300 {
		var b strings.Builder
		for n := r.IntN(80); n > 0; n-- {
			if r.IntN(50) == 0 {
				b.WriteByte('"')
			}
			b.WriteString(tokens[r.IntN(len(tokens))])
		}
		in = append(in, []byte(b.String()))
	}
	return in
}

func TestStringEndMatchesReference(t *testing.T) {
	for _, p := range stringInputs() {
		for _, escaped := range []bool{false, true} {
			want, wantEsc := refStringEnd(p, escaped)
			check := func(cuts []int) {
				t.Helper()
				got, gotEsc := stringEndInReads(p, escaped, cuts)
				if got != want || gotEsc != wantEsc {
					t.Fatalf("stringEnd(%q, %v) in reads cut at %v = %d, %v; want %d, %v", p, escaped, cuts, got, gotEsc, want, wantEsc)
				}
			}
			check(nil)
			// One cut at every place up to the end found, and a little after.
			last := len(p)
			if want >= 0 {
				last = min(want+2, len(p))
			}
			for k := 0; k <= last; k++ {
				check([]int{k})
			}
			// Reads of a few sizes, each cut at many places.
			for _, size := range []int{1, 2, 3, 7, 8, 9, 63, 64, 65} {
				var cuts []int
				for k := size; k < len(p); k += size {
					cuts = append(cuts, k)
				}
				check(cuts)
			}
		}
	}
}

// refNested is the scanner's nested a byte at a time, from the state
// (depth, in a string, after a backslash in it) the bytes before p left.
type refNested struct {
	depth    int32
	str, esc bool
}

// step reads c, and reports whether it closes the value.
func (r *refNested) step(c byte) bool {
	if r.str {
		switch {
		case r.esc:
			r.esc = false
		case c == '\\':
			r.esc = true
		case c == '"':
			r.str = false
		}
		return false
	}
	switch c {
	case '"':
		r.str = true
	case '{', '[':
		r.depth++
	case '}', ']':
		r.depth--
		return r.depth == 0
	}
	return false
}

// checkNested holds the scanner's skip of a nested value (of depth depth
// at p's start) in reads cut at cuts to the reference, and the state it
// carries from one read to the next.
func checkNested(t *testing.T, p []byte, depth int32, cuts []int) {
	t.Helper()
	ref := refNested{depth: depth}
	s := jsonScanner{phase: phNested, depth: depth}
	from := 0
	for _, to := range append(cuts, len(p)) {
		if from == to {
			continue
		}
		end := -1
		for i := from; i < to; i++ {
			if ref.step(p[i]) {
				end = i
				break
			}
		}
		last := from + s.nested(p[from:to], 0)
		if end >= 0 {
			if s.phase != phAfter || last != end {
				t.Fatalf("nested(%q) from depth %d, reads cut at %v: ended at %d (phase %d); want the value to end at %d", p, depth, cuts, last, s.phase, end)
			}
			return
		}
		if s.phase != phNested || last != to-1 || s.depth != ref.depth || s.str != ref.str || s.esc != ref.esc {
			t.Fatalf("nested(%q) from depth %d, reads cut at %v: at %d, phase %d, depth %d, string %v, escape %v; want the value going on at depth %d, string %v, escape %v",
				p, depth, cuts, last+1, s.phase, s.depth, s.str, s.esc, ref.depth, ref.str, ref.esc)
		}
		from = to
	}
}

// nestedInputs are values' bytes after their opening bracket: strings full
// of escapes and brackets among nested values; brackets that bring the
// depth to 0 at every place of a block; backslashes outside strings (not
// JSON, read as the byte loop always did); random bytes.
func nestedInputs() (in [][]byte) {
	for _, v := range []string{
		`"a\"b",{"id":1,"t":"x\\"},[1,[2,[3]]],"\\\\\"[{"]`,
		`{"id":1234,"name":"a name","tags":["x","y"],"path":"C:\\\\dir"},{"k":"` + strings.Repeat(`\"[\\`, 40) + `"}]`,
		strings.Repeat(`[`, 70) + `"` + strings.Repeat(`]`, 70) + `"` + strings.Repeat(`]`, 71),
		`"` + strings.Repeat("plain text ", 30) + `",` + strings.Repeat(`{\"id\":1},`, 20) + `]`,
		`1,\"]",2]`,
		`"x",\` + strings.Repeat(`"]\`, 30) + `]`,
	} {
		in = append(in, []byte(v))
	}
	for at := range 2*blockLen + 2 {
		in = append(in, []byte(strings.Repeat(`"\\",`, at/5)+`..."`[:at%5]+`]]]]`))
		in = append(in, []byte(strings.Repeat(`[`, at)+strings.Repeat(`]`, at+1)))
	}
	r := rand.New(rand.NewPCG(4, 5))
	const alphabet = `""\\\{[[}]],:a1`
	for range 300 {
		b := make([]byte, r.IntN(400))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		in = append(in, b)
	}
	return in
}

func TestNestedMatchesReference(t *testing.T) {
	for _, p := range nestedInputs() {
		for _, depth := range []int32{1, 3, 100} {
			checkNested(t, p, depth, nil)
			for k := 1; k < len(p); k++ {
				checkNested(t, p, depth, []int{k})
			}
			for _, size := range []int{1, 2, 3, 7, 8, 9, 63, 64, 65} {
				var cuts []int
				for k := size; k < len(p); k += size {
					cuts = append(cuts, k)
				}
				checkNested(t, p, depth, cuts)
			}
		}
	}
}

// FuzzScanSkip holds stringEnd and nested to their references on any
// bytes, in two reads cut anywhere.
func FuzzScanSkip(f *testing.F) {
	for _, p := range nestedInputs()[:6] {
		f.Add(p, uint16(len(p)/2), false, uint8(1))
	}
	f.Add([]byte(strings.Repeat(`\`, 63)+`"`+strings.Repeat(`x\"`, 40)), uint16(64), true, uint8(2))
	f.Fuzz(func(t *testing.T, p []byte, cut uint16, escaped bool, depth uint8) {
		k := int(cut) % (len(p) + 1)
		want, wantEsc := refStringEnd(p, escaped)
		if got, gotEsc := stringEndInReads(p, escaped, []int{k}); got != want || gotEsc != wantEsc {
			t.Fatalf("stringEnd(%q, %v) cut at %d = %d, %v; want %d, %v", p, escaped, k, got, gotEsc, want, wantEsc)
		}
		checkNested(t, p, int32(depth)+1, []int{k})
	})
}

func BenchmarkStringEnd(b *testing.B) {
	for _, kind := range []string{"jsontext", "lines", "plain"} {
		var item string
		switch kind {
		case "jsontext":
			item = `{\"id\":1234,\"name\":\"a name\",\"tags\":[\"x\",\"y\"],\"path\":\"C:\\\\dir\"},\n`
		case "lines":
			item = `a line\n`
		case "plain":
			item = "a plain text"
		}
		p := []byte(strings.Repeat(item, (1<<20)/len(item)) + `"`)
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				if j, _ := stringEnd(p, false); j != len(p)-1 {
					b.Fatal(j)
				}
			}
		})
	}
}

func BenchmarkNested(b *testing.B) {
	for _, kind := range []string{"objects", "deep"} {
		var item string
		switch kind {
		case "objects":
			item = `{"id":1234,"name":"a name","tags":["x","y"],"path":"C:\\\\dir"},`
		case "deep":
			item = strings.Repeat("[", 100) + "1" + strings.Repeat("]", 100) + ","
		}
		p := []byte(strings.Repeat(item, (1<<20)/len(item)) + `]`)
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				s := jsonScanner{phase: phNested, depth: 1}
				if j := s.nested(p, 0); j != len(p)-1 || s.phase != phAfter {
					b.Fatal(j)
				}
			}
		})
	}
}
