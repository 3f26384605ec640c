package wire

import (
	"crypto/tls"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// The client's HTTP clients: the default one of each ResilientClient
// (TunedClient), and each session's copy of it with a cookie jar of its
// own (SessionClient; client.WithCookies says why).

// sessionTickets is the TLS session cache every default HTTP client shares.
var sessionTickets = tls.NewLRUClientSessionCache(0)

// TunedClient is the default HTTP client of one ResilientClient (see
// client.WithHTTPClient), and its Renewable Transport.
//
// Each ResilientClient gets a Transport of its own, so that its connections
// are its own. What sharing one would lose is isolation:
//   - a keepalive probe tests the path the client's next call will take;
//     from a shared pool it tests whichever connection it is handed, and
//     another client's call meets the dead one;
//   - a connection found dead under a request makes the client close its
//     idle connections, which usually died with it (a restart, a middlebox
//     that forgot its flows); on a shared Transport that closes every
//     client's;
//   - over HTTP/2 a shared Transport carries every client's calls on one
//     connection, and one dead connection fails them all.
//
// It is a Renewable, so that a client gone idle keeps nothing of it
// (WithKeepIdleConnection): with the connection its probes would keep (4 KiB
// read and write buffers, a reader and a writer goroutine) and the
// Transport's bookkeeping, an idle client cost 20 KB and two goroutines;
// without, about 8 KB and none, where 1000 clients sharing one Transport
// cost 6 KB each (BenchmarkIdleClients).
//
// Shared, since it carries nothing of any one client: the TLS session
// cache, so that a fleet of clients reconnecting after an outage resumes
// TLS sessions instead of paying a full handshake each; and, without a TLS
// config of the caller's, the pattern each client's Transports are cloned
// from, so that an idle client keeps no Transport (Renewable).
// Not shrunk: the
// connection buffers; 1 KiB ones made calls with 1-6 KB messages up to 10%
// (writes) and 40% (reads) slower on loopback. A plain-http endpoint gets HTTP/1 only and no TLS
// config: Go would not speak HTTP/2 to it anyway, and the two cost 2 KB per
// Transport.
func TunedClient(endpoint *url.URL, tlsConfig *tls.Config) (*http.Client, *Renewable) {
	fresh := clonePlain
	switch {
	case endpoint.Scheme != "https":
	case tlsConfig == nil:
		fresh = cloneTLS
	default:
		// The caller's config, copied once: what an idle client keeps of
		// its Transport.
		cfg := tlsConfig.Clone()
		if cfg.ClientSessionCache == nil {
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
		}
		fresh = func() *http.Transport { return tunedTransport(true, cfg) }
	}
	r := NewRenewable(fresh)
	return &http.Client{Transport: r}, r
}

// plainPattern and tlsPattern are what the Transports of TunedClient are
// cloned from, for a plain-http endpoint and for an https one without a TLS
// config of the caller's: one each for every client of the process. No
// request is sent on them.
var (
	plainPattern = sync.OnceValue(func() *http.Transport { return tunedTransport(false, nil) })
	tlsPattern   = sync.OnceValue(func() *http.Transport { return tunedTransport(true, nil) })
)

func clonePlain() *http.Transport { return plainPattern().Clone() }
func cloneTLS() *http.Transport   { return tlsPattern().Clone() }

// tunedTransport is a Transport of TunedClient's: for an https endpoint,
// with (a copy of) tlsConfig if not nil, or for a plain-http one.
func tunedTransport(https bool, tlsConfig *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.IdleConnTimeout = 50 * time.Second
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 256
	t.DialContext = CheckedDial(t.DialContext)
	if https {
		// HTTP/2 is negotiated by ALPN where the server offers it:
		// ForceAttemptHTTP2, copied from http.DefaultTransport, keeps it on
		// beside a custom dialer and TLS config.
		t.TLSClientConfig = &tls.Config{ClientSessionCache: sessionTickets}
		if tlsConfig != nil {
			t.TLSClientConfig = tlsConfig.Clone()
		}
		return t
	}
	var http1 http.Protocols
	http1.SetHTTP1(true)
	t.Protocols = &http1
	// Clone copied the TLS config that setting up HTTP/2 put on
	// http.DefaultTransport: 480 bytes a client, for no TLS.
	t.TLSClientConfig = nil
	return t
}

// SessionClient is the HTTP client of a new session: shared, the
// client's, with a cookie jar of the session's own, or nil to use shared
// as it is (cookies turned off, or a caller's client with a jar of its
// own). The copy shares the Transport, and so the connections.
func SessionClient(shared *http.Client, cookies bool) *http.Client {
	if !cookies || shared.Jar != nil {
		return nil
	}
	// One allocation for both: an idle client's heap is counted in bytes
	// (BenchmarkIdleClients).
	withJar := &struct {
		http.Client
		jar sessionJar
	}{Client: *shared}
	withJar.Client.Jar = &withJar.jar
	return &withJar.Client
}

// sessionJar is a session's cookie jar, made on the first cookie its
// server sets: a session that is never sent one, like an idle client's,
// costs a pointer. It is safe for concurrent use.
type sessionJar struct {
	jar atomic.Pointer[cookiejar.Jar]
}

// SetCookies stores cookies set by an answer to u.
func (j *sessionJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	jar := j.jar.Load()
	if jar == nil {
		// cookiejar.New fails only with options it is not given.
		made, _ := cookiejar.New(nil)
		if !j.jar.CompareAndSwap(nil, made) {
			made = j.jar.Load()
		}
		jar = made
	}
	jar.SetCookies(u, cookies)
}

// Cookies are the cookies to send with a request to u.
func (j *sessionJar) Cookies(u *url.URL) []*http.Cookie {
	if jar := j.jar.Load(); jar != nil {
		return jar.Cookies(u)
	}
	return nil
}

// ModuleVersion is this module's version, as the build says it: the
// client's in the Implementation it declares.
func ModuleVersion() string {
	const path = "github.com/resilientmcp/resilientmcp"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == path && bi.Main.Version != "" {
			return bi.Main.Version
		}
		for _, dep := range bi.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "(devel)"
}
