package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// 16 goroutines refused with the same token cause one fetch, and all get
// its replacement; one that reports the old token later gets the new one
// without a fetch.
func TestSourceReplacesARejectedTokenOnceForAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fetches atomic.Int32
		s := NewSource(func(_ context.Context, rejected string) (string, error) {
			fetches.Add(1)
			time.Sleep(10 * time.Millisecond) // a token endpoint's round trip
			if rejected == "" {
				return "t1", nil
			}
			return "t2", nil
		})
		if tok, err := s.Token(t.Context()); tok != "t1" || err != nil {
			t.Fatalf("first token = %q, %v", tok, err)
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				if tok, err := s.Rejected(t.Context(), "t1", Challenge{}); tok != "t2" || err != nil {
					t.Errorf("replacement = %q, %v", tok, err)
				}
			})
		}
		wg.Wait()
		if tok, err := s.Rejected(t.Context(), "t1", Challenge{}); tok != "t2" || err != nil {
			t.Errorf("late report of t1 = %q, %v", tok, err)
		}
		if n := fetches.Load(); n != 2 {
			t.Errorf("%d fetches, want 2: the first token and one replacement", n)
		}
	})
}

// A source that gives back the token just refused, or fails, is an *Error
// that says which; a failed fetch is tried again by the next caller.
func TestSourceErrors(t *testing.T) {
	same := NewSource(func(context.Context, string) (string, error) { return "t1", nil })
	var ae *Error
	if _, err := same.Rejected(t.Context(), "t1", Challenge{}); !errors.As(err, &ae) || ae.Reason != ReasonTokenRejected {
		t.Errorf("the same token again = %v; want %s", err, ReasonTokenRejected)
	}
	down := errors.New("token endpoint down")
	calls := 0
	failing := NewSource(func(context.Context, string) (string, error) {
		calls++
		if calls == 1 {
			return "", down
		}
		return "t1", nil
	})
	if _, err := failing.Token(t.Context()); !errors.As(err, &ae) || ae.Reason != ReasonNoToken || !errors.Is(err, down) {
		t.Errorf("failed first fetch = %v; want %s wrapping the cause", err, ReasonNoToken)
	}
	if tok, err := failing.Token(t.Context()); tok != "t1" || err != nil {
		t.Errorf("next fetch = %q, %v", tok, err)
	}
}

// The token goes to the origin only; a 401 is answered by one replacement
// and the request sent again with its body; a token refused twice ends.
func TestTransport(t *testing.T) {
	var mu sync.Mutex
	valid, seen := "t2", map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Header.Get("Authorization")+" "+string(body)]++
		ok := r.Header.Get("Authorization") == "Bearer "+valid
		mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			t.Errorf("another origin got Authorization %q", a)
		}
	}))
	defer other.Close()

	origin, _ := url.Parse(srv.URL)
	next := map[string]string{"": "t1", "t1": "t2", "t2": "t3"}
	tr := &Transport{Base: http.DefaultTransport, Origin: origin, Source: NewSource(func(_ context.Context, rejected string) (string, error) {
		return next[rejected], nil
	})}
	c := &http.Client{Transport: tr}
	resp, err := c.Post(srv.URL+"/mcp", "text/plain", strings.NewReader("call"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "call" {
		t.Errorf("answer %q after a refreshed token", got)
	}
	if seen["Bearer t1 call"] != 1 || seen["Bearer t2 call"] != 1 {
		t.Errorf("requests seen %v: want the call once with t1 (refused) and once with t2", seen)
	}
	if _, err := c.Get(other.URL); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	valid = "never"
	mu.Unlock()
	_, err = c.Post(srv.URL+"/mcp", "text/plain", strings.NewReader("again"))
	var ae *Error
	if !errors.As(err, &ae) || ae.Reason != ReasonTokenRejected {
		t.Errorf("a token refused twice = %v; want %s", err, ReasonTokenRejected)
	}
}
