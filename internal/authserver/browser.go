package authserver

import (
	"context"
	"fmt"
	"net/http"
)

// Approve is a user's browser for this server, which needs no user: it
// opens authURL and returns the URL it was redirected to, without
// following it. It is what an OAuthConfig.Authorize func does in tests and
// examples. It is safe for concurrent use.
func Approve(ctx context.Context, authURL string) (string, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("authorization endpoint answered %s without a redirect", resp.Status)
	}
	return loc, nil
}
