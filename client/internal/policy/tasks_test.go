package policy

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestCallAs(t *testing.T) {
	for _, tt := range []struct {
		support       mcp.TaskSupport
		listed, asked bool
		want          TaskCall
	}{
		{mcp.TaskSupportRequired, true, false, CallAsTask},
		{mcp.TaskSupportRequired, true, true, CallAsTask},
		{mcp.TaskSupportOptional, true, false, CallPlain},
		{mcp.TaskSupportOptional, true, true, CallAsTask},
		{mcp.TaskSupportForbidden, true, true, CallPlain},
		{"", true, true, CallPlain},       // listed, says nothing
		{"", false, true, LearnFirst},     // not listed: list once
		{"", false, false, PlainThenTask}, // no request of its own
	} {
		if got := CallAs(tt.support, tt.listed, tt.asked); got != tt.want {
			t.Errorf("CallAs(%q, listed %v, asked %v) = %d, want %d", tt.support, tt.listed, tt.asked, got, tt.want)
		}
	}
}

func TestRetryAsTask(t *testing.T) {
	if !RetryAsTask(true, false) || !RetryAsTask(false, true) {
		t.Error("a refused plain call of a tool never listed is not retried as a task")
	}
	if RetryAsTask(false, false) {
		t.Error("retried as a task without a refusal")
	}
	// With a listing, the form is decided before the call (CallAs), and
	// a refusal is not asked about.
	if CallAs("", true, false) != CallPlain || CallAs("", true, true) != CallPlain {
		t.Error("a listed tool that says nothing of tasks is not called plainly, once")
	}
}

func TestTaskPollInterval(t *testing.T) {
	ms := func(n int64) *int64 { return &n }
	for _, tt := range []struct {
		suggested *int64
		want      time.Duration
	}{
		{nil, DefaultTaskPollInterval},
		{ms(0), MinTaskPollInterval}, // never a busy loop
		{ms(-5), MinTaskPollInterval},
		{ms(1), MinTaskPollInterval},
		{ms(250), 250 * time.Millisecond},
		{ms(5000), 5 * time.Second},
		{ms(3_600_000), MaxTaskPollInterval},
		{ms(1 << 62), MaxTaskPollInterval}, // no overflow
	} {
		if got := TaskPollInterval(tt.suggested); got != tt.want {
			t.Errorf("TaskPollInterval(%v) = %v, want %v", tt.suggested, got, tt.want)
		}
	}
}

// Once the task exists, nothing but the server's own word that it does not
// know it ends the call as lost; a failure on the way is asked again.
func TestAfterTaskRequest(t *testing.T) {
	for _, tt := range []struct {
		answered   bool
		code       int
		callerGone bool
		want       TaskStep
	}{
		{false, 0, false, PollAgain},
		{true, mcp.INVALID_PARAMS, false, TaskLost},
		{true, mcp.METHOD_NOT_FOUND, false, TaskAnswered},
		{true, mcp.INTERNAL_ERROR, false, TaskAnswered},
		{false, 0, true, TaskCallerGone},
		{true, mcp.INVALID_PARAMS, true, TaskCallerGone},
	} {
		if got := AfterTaskRequest(tt.answered, tt.code, tt.callerGone); got != tt.want {
			t.Errorf("AfterTaskRequest(%v, %d, %v) = %d, want %d", tt.answered, tt.code, tt.callerGone, got, tt.want)
		}
	}
}
