package authserver

import (
	"crypto/subtle"
	"net/http"
	"net/url"
)

// oauthError is an error answer of the token endpoint (RFC 6749 §5.2).
type oauthError struct {
	status int
	code   string
	desc   string
}

func badRequest(code, desc string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: code, desc: desc}
}

// serveToken is the token endpoint.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	s.stats.tokenRequests.Add(1)
	if s.refuseIfDown(w) {
		s.stats.tokenRequestsWhileDown.Add(1)
		return
	}
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	jkt, ok := s.tokenProof(w, r)
	if !ok {
		return
	}
	form := r.PostForm
	var (
		resp tokenResponse
		oerr *oauthError
	)
	switch form.Get("grant_type") {
	case "authorization_code":
		resp, oerr = s.exchangeCode(c, form, jkt)
	case "refresh_token":
		resp, oerr = s.refreshGrant(c, form, jkt)
	case "client_credentials":
		resp, oerr = s.clientCredentials(c, form, jkt)
	case grantTokenExchange:
		resp, oerr = s.tokenExchange(c, form)
	case grantJWTBearer:
		resp, oerr = s.jwtBearer(c, form, jkt)
	case "":
		oerr = badRequest("invalid_request", "grant_type is required")
	default:
		oerr = badRequest("unsupported_grant_type", "unsupported grant_type")
	}
	if oerr != nil {
		writeError(w, oerr.status, oerr.code, oerr.desc)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// serveRevoke is token revocation (RFC 7009): it revokes the grant the
// token belongs to, access or refresh token alike. As the RFC asks, an
// unknown token, or one of another client, is answered 200 and ignored.
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if s.refuseIfDown(w) {
		return
	}
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	var g *grant
	if t := s.access[tok]; t != nil {
		g = t.grant
	} else if t := s.refresh[tok]; t != nil {
		g = t.grant
	}
	if g != nil && g.clientID == c.id {
		g.revoked = true
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// authenticate parses the form and authenticates the client by the method
// it registered, answering the error itself when it returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*client, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "body is not a form")
		return nil, false
	}
	form := r.PostForm
	id, secret, basic := r.BasicAuth()
	method := "client_secret_basic"
	if basic {
		// RFC 6749 §2.3.1: both are form-urlencoded before Basic encoding.
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil || form.Has("client_secret") ||
			(form.Has("client_id") && form.Get("client_id") != id) {
			writeError(w, http.StatusBadRequest, "invalid_request", "malformed or conflicting client authentication")
			return nil, false
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
		method = "client_secret_post"
	}
	if secret == "" {
		method = "none"
	}
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	if c == nil || !c.accepts(method, secret) {
		if basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="authserver"`)
		}
		writeError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return nil, false
	}
	return c, true
}

// accepts reports whether c may authenticate with method and secret. A
// public client may also name itself in Basic with an empty password.
func (c *client) accepts(method, secret string) bool {
	if c.secret == "" {
		return method == "none"
	}
	if method == "none" || (!c.preRegistered && method != c.authMethod) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
}
