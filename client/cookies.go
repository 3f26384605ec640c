package client

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"sync/atomic"
)

// WithCookies says whether each session keeps the cookies its server sets,
// and sends them back on the session's requests. Default true.
//
// Load balancers keep a client on a replica by a cookie they insert
// (HAProxy's "cookie SRV insert", AWS ALB stickiness, nginx's sticky
// cookie): dropped, every request lands on a replica that does not know
// the session (F39). Each session has a jar of its own (RFC 6265,
// net/http/cookiejar), made with the session and dropped with it, since
// the sessions of a pool may live on different replicas; a session opened
// after a loss starts with an empty jar, since the replica the old one
// named may be gone. A session whose server sets no cookie has no jar.
//
// With WithHTTPClient, an http.Client that has a Jar of its own keeps it:
// every session shares that jar, as the caller asked.
func WithCookies(keep bool) Option {
	return optionFunc(func(o *options) { o.noCookies = !keep })
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

// sessionHTTPClient is the HTTP client of a new session: the client's
// shared one, with a cookie jar of the session's own, or nil to use the
// shared one as it is (cookies turned off, or a caller's client with a jar
// of its own). The copy shares the Transport, and so the connections.
func (ss *sessions) sessionHTTPClient() *http.Client {
	if ss.c.opts.noCookies || ss.c.httpClient.Jar != nil {
		return nil
	}
	// One allocation for both: an idle client's heap is counted in bytes
	// (BenchmarkIdleClients).
	withJar := &struct {
		http.Client
		jar sessionJar
	}{Client: *ss.c.httpClient}
	withJar.Client.Jar = &withJar.jar
	return &withJar.Client
}
