package client

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resilientmcp/resilientmcp/internal/testcert"
)

// h2front is a TLS front that speaks HTTP/2 to the client and passes its
// frames to a TLS HTTP/2 backend (the test server) unchanged: a load
// balancer reduced to what these tests need, with two faults a real one
// produces.
//
//   - Armed with refuseNext, it answers the next response (the backend's
//     HEADERS: the request reached the handler and ran) with RST_STREAM
//     REFUSED_STREAM instead, as HAProxy answers the streams it had
//     forwarded to a replica that died under them.
//   - Armed with goAwayNext, it turns the next request away unforwarded
//     with a graceful GOAWAY whose last stream id is below it, as a
//     draining proxy or server does.
//
// Frames of a stream it refused or turned away are dropped. So that
// dropping a header block leaves HPACK in step, it tells each side that the
// other's header table size is 0 (a setting appended to each side's first
// SETTINGS): no header block then refers to another.
type h2front struct {
	t        *testing.T
	ln       net.Listener
	backend  string
	toServer *tls.Config

	refuseNext, goAwayNext atomic.Int32
	refused, goneAway      atomic.Int32
	accepted               atomic.Int32

	mu     sync.Mutex
	conns  []net.Conn
	protos []string // the protocol ALPN chose on each client connection
	closed bool
	wg     sync.WaitGroup
}

func newH2Front(t *testing.T, ca *testcert.CA, backend string) *h2front {
	t.Helper()
	cfg := ca.ServerConfig()
	cfg.NextProtos = []string{"h2"}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	toServer := ca.ClientConfig()
	toServer.NextProtos = []string{"h2"}
	toServer.ServerName = "127.0.0.1"
	f := &h2front{t: t, ln: ln, backend: backend, toServer: toServer}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *h2front) url() string { return "https://" + f.ln.Addr().String() + "/mcp" }

func (f *h2front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if !f.track(c) {
			return
		}
		f.accepted.Add(1)
		f.wg.Add(1)
		go f.serve(c.(*tls.Conn))
	}
}

func (f *h2front) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns = append(f.conns, c)
	return true
}

// dropAll closes every connection, client's and backend's, at once: the
// front died.
func (f *h2front) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

func (f *h2front) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.ln.Close()
	f.dropAll()
	f.wg.Wait()
}

// negotiated lists the protocol ALPN chose on each client connection.
func (f *h2front) negotiated() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.protos...)
}

// HTTP/2 frame types and what the front needs of them (RFC 9113).
const (
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	frameGoAway       = 0x7
	flagAck           = 0x1
	settingTableSize  = 0x1
	codeRefusedStream = 0x7
	clientPreface     = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

type frame struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

func readFrame(r io.Reader) (frame, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	fr := frame{typ: h[3], flags: h[4], stream: binary.BigEndian.Uint32(h[5:]) & 0x7fffffff, payload: make([]byte, n)}
	_, err := io.ReadFull(r, fr.payload)
	return fr, err
}

func (fr frame) bytes() []byte {
	n := len(fr.payload)
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), fr.typ, fr.flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], fr.stream)
	return append(b, fr.payload...)
}

// noHeaderTable appends SETTINGS_HEADER_TABLE_SIZE=0 to a SETTINGS frame.
func noHeaderTable(fr frame) frame {
	fr.payload = append(fr.payload, 0, settingTableSize, 0, 0, 0, 0)
	return fr
}

// lockedWriter serialises the two pumps' writes to the client.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(fr frame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(fr.bytes())
	return err
}

func (f *h2front) serve(client *tls.Conn) {
	defer f.wg.Done()
	defer client.Close()
	if err := client.Handshake(); err != nil {
		return
	}
	f.mu.Lock()
	f.protos = append(f.protos, client.ConnectionState().NegotiatedProtocol)
	f.mu.Unlock()
	server, err := tls.Dial("tcp", f.backend, f.toServer)
	if err != nil {
		return
	}
	defer server.Close()
	if !f.track(server) {
		return
	}
	toClient := &lockedWriter{w: client}
	var mu sync.Mutex
	dropped := map[uint32]bool{} // streams refused or turned away: their frames go nowhere
	var lastForwarded uint32
	var done sync.WaitGroup
	done.Go(func() {
		// Client to backend.
		defer server.Close()
		r := bufio.NewReader(client)
		var preface [len(clientPreface)]byte
		if _, err := io.ReadFull(r, preface[:]); err != nil || string(preface[:]) != clientPreface {
			return
		}
		if _, err := server.Write(preface[:]); err != nil {
			return
		}
		first := true
		for {
			fr, err := readFrame(r)
			if err != nil {
				return
			}
			if fr.typ == frameSettings && fr.flags&flagAck == 0 && first {
				first = false
				fr = noHeaderTable(fr)
			}
			mu.Lock()
			drop := dropped[fr.stream]
			if fr.typ == frameHeaders && fr.stream%2 == 1 && !drop && fr.stream > lastForwarded {
				if f.goAwayNext.Add(-1) >= 0 {
					dropped[fr.stream], drop = true, true
					goAway := frame{typ: frameGoAway, payload: make([]byte, 8)}
					binary.BigEndian.PutUint32(goAway.payload, lastForwarded) // NO_ERROR
					f.goneAway.Add(1)
					mu.Unlock()
					if toClient.write(goAway) != nil {
						return
					}
					continue
				}
				lastForwarded = fr.stream
			}
			mu.Unlock()
			if drop {
				continue
			}
			if _, err := server.Write(fr.bytes()); err != nil {
				return
			}
		}
	})
	done.Go(func() {
		// Backend to client.
		defer client.Close()
		r := bufio.NewReader(server)
		first := true
		for {
			fr, err := readFrame(r)
			if err != nil {
				return
			}
			if fr.typ == frameSettings && fr.flags&flagAck == 0 && first {
				first = false
				fr = noHeaderTable(fr)
			}
			mu.Lock()
			drop := dropped[fr.stream]
			if fr.typ == frameHeaders && fr.stream%2 == 1 && !drop && f.refuseNext.Add(-1) >= 0 {
				dropped[fr.stream], drop = true, true
				mu.Unlock()
				rst := frame{typ: frameRSTStream, stream: fr.stream, payload: []byte{0, 0, 0, codeRefusedStream}}
				f.refused.Add(1)
				if toClient.write(rst) != nil {
					return
				}
				continue
			}
			mu.Unlock()
			if drop {
				continue
			}
			if toClient.write(fr) != nil {
				return
			}
		}
	})
	done.Wait()
}

// errNotH2 is a connection the front accepted on another protocol than h2.
var errNotH2 = errors.New("ALPN did not choose h2")

// allH2 checks that ALPN chose h2 on every connection the front accepted.
func (f *h2front) allH2() error {
	protos := f.negotiated()
	if len(protos) == 0 {
		return errors.New("no connection")
	}
	for _, p := range protos {
		if p != "h2" {
			return errNotH2
		}
	}
	return nil
}
