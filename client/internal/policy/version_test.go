package policy

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestVersionRefused(t *testing.T) {
	const (
		v2026 = mcp.ProtocolVersion20260728
		v2025 = mcp.ProtocolVersion20251125
		later = "2027-03-01" // a stateless-era revision the client knows of in this test only
	)
	known := []string{later, v2026, v2025, mcp.ProtocolVersion20250618}
	for _, tc := range []struct {
		name      string
		sent      string
		supported []string
		resent    bool
		want      string
		ok        bool
	}{
		{"the version refused is listed: sent again with it", v2026, []string{v2026}, false, v2026, true},
		{"the newest both speak, in the era of the one refused", v2026, []string{v2025, v2026, later}, false, later, true},
		{"versions the client does not know are skipped", v2026, []string{"2099-01-01", v2026}, false, v2026, true},
		{"only once", v2026, []string{v2026}, true, "", false},
		{"no version of the stateless era listed: the refusal stands", v2026, []string{v2025}, false, "", false},
		{"a session-era request negotiates in initialize", v2025, []string{v2026, v2025}, false, "", false},
		{"no version declared", "", []string{v2026}, false, "", false},
		{"nothing listed", v2026, nil, false, "", false},
	} {
		got, ok := VersionRefused(tc.sent, tc.supported, known, tc.resent)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: VersionRefused(%q, %v, resent=%v) = %q, %v; want %q, %v", tc.name, tc.sent, tc.supported, tc.resent, got, ok, tc.want, tc.ok)
		}
	}
	if !StatelessEraRefusal([]string{v2025, v2026}) || StatelessEraRefusal([]string{v2025}) || StatelessEraRefusal(nil) {
		t.Error("StatelessEraRefusal: a server listing a 2026-07-28-era version speaks that era, and only such a server")
	}
}

func TestParamHeadersRefused(t *testing.T) {
	if !ParamHeadersRefused(mcp.HEADER_MISMATCH, false) {
		t.Error("a tools/call refused for its headers is not sent again")
	}
	if ParamHeadersRefused(mcp.HEADER_MISMATCH, true) {
		t.Error("a tools/call refused for its headers is sent again more than once")
	}
	for _, code := range []int{mcp.INVALID_PARAMS, mcp.INTERNAL_ERROR, mcp.UNSUPPORTED_PROTOCOL_VERSION} {
		if ParamHeadersRefused(code, false) {
			t.Errorf("error %d taken for a refusal for the headers", code)
		}
	}
}
