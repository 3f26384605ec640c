package wire

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// Default clients keep their connections apart but share TLS session
// tickets: a second client to the same server resumes the first one's
// session instead of a full handshake.
func TestDefaultClientsResumeEachOthersTLSSessions(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	endpoint, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	resumed := func() bool {
		t.Helper()
		hc, _ := TunedClient(endpoint, nil)
		tr := hc.Transport.(*Renewable).Transport()
		defer tr.CloseIdleConnections()
		tr.TLSClientConfig.RootCAs = roots
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.DidResume
	}
	if resumed() {
		t.Fatal("the first connection resumed a session: the test server is not fresh")
	}
	if !resumed() {
		t.Error("a second client made a full TLS handshake: session tickets are not shared")
	}
}

func TestPlainHTTPEndpointsSpeakHTTP1Only(t *testing.T) {
	endpoint, _ := url.Parse("http://127.0.0.1:1/mcp")
	tr := tunedClientTransport(endpoint)
	if p := tr.Protocols; p == nil || !p.HTTP1() || p.HTTP2() || p.UnencryptedHTTP2() {
		t.Errorf("protocols %v for a plain-http endpoint, want HTTP/1 only", p)
	}
	if tr.TLSClientConfig != nil {
		t.Error("a TLS config for a plain-http endpoint")
	}
	endpoint, _ = url.Parse("https://127.0.0.1:1/mcp")
	tr = tunedClientTransport(endpoint)
	if !tr.ForceAttemptHTTP2 {
		t.Error("an https endpoint's transport would not try HTTP/2")
	}
}

func tunedClientTransport(endpoint *url.URL) *http.Transport {
	_, r := TunedClient(endpoint, nil)
	return r.Transport()
}
