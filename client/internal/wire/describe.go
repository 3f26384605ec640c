package wire

import "strings"

// Describe is err's message with what mcp-go says twice said once: its
// transport and its client both prefix "failed to send request", and every
// transport failure is "transport error: ...". For reading only (the
// client's errors and logs quote it); nothing decides on it.
func Describe(err error) string {
	msg := strings.ReplaceAll(err.Error(), "transport error: ", "")
	const dup = "failed to send request: "
	for strings.Contains(msg, dup+dup) {
		msg = strings.ReplaceAll(msg, dup+dup, dup)
	}
	return msg
}
