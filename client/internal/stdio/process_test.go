package stdio

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

func TestAnswerIDBeforeTheCut(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xxxx`, `7`},
		{`{"jsonrpc":"2.0","id":"a-1","result":"xx`, `"a-1"`},
		{`{"result":{"content":"xxxxxxxx`, ``},                            // the TypeScript SDK's order: the id after the cut
		{`{"jsonrpc":"2.0","method":"sampling/createMessage","id":3`, ``}, // a request
		{`not json at all`, ``},
		{`{"jsonrpc":"2.0","id":`, ``},
	} {
		if got := string(wire.AnswerID([]byte(c.line))); got != c.want {
			t.Errorf("wire.AnswerID(%.40q) = %q; want %q", c.line, got, c.want)
		}
	}
}

// newTestFilter is a Filter over input, of a process that has exited.
func newTestFilter(input string, limit int64, skipped *atomic.Uint64) (*Filter, *Process) {
	p := &Process{pid: 1, log: slog.New(slog.DiscardHandler), exited: make(chan struct{})}
	close(p.exited)
	p.filter = newStdoutFilter(strings.NewReader(input), limit, skipped, p)
	return p.filter, p
}

func TestStdoutFilterSkipsAndCountsWhatIsNotJSONRPC(t *testing.T) {
	var skipped atomic.Uint64
	f, p := newTestFilter("starting up\n{\"id\":1}\n\n  \nDEBUG x\n[1]\n", 1<<20, &skipped)
	var lost error
	p.onLost = func(err error) { lost = err }
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "{\"id\":1}\n[1]\n" || skipped.Load() != 2 {
		t.Errorf("passed %q, skipped %d; want the two JSON lines, 2 skipped", out, skipped.Load())
	}
	if lost == nil {
		t.Error("the end of stdout did not lose the session")
	}
}

func TestStdoutFilterLineOverTheLimit(t *testing.T) {
	var skipped atomic.Uint64
	answer := `{"jsonrpc":"2.0","id":4,"result":"` + strings.Repeat("x", 100) + "\"}\n"
	f, _ := newTestFilter(answer+`{"jsonrpc":"2.0","id":5,"result":"ok"}`+"\n", 40, &skipped)
	r := bufio.NewReader(f)
	first, err := r.ReadString('\n')
	if err != nil || !strings.Contains(first, `"id":4`) || !strings.Contains(first, f.marker) {
		t.Fatalf("in place of the line over the limit: %q, %v; want the marked error answer to id 4", first, err)
	}
	second, err := r.ReadString('\n')
	if err != nil || !strings.Contains(second, `"id":5`) {
		t.Fatalf("the next line: %q, %v", second, err)
	}

	// No id before the cut: the stream ends.
	f, p := newTestFilter(`{"result":"`+strings.Repeat("x", 100)+"\"}\n", 40, &skipped)
	var lost error
	p.onLost = func(err error) { lost = err }
	if out, _ := io.ReadAll(f); len(out) != 0 || !errors.Is(lost, ErrLineTooLong) {
		t.Fatalf("read %q, lost %v; want nothing and ErrLineTooLong", out, lost)
	}
}

func TestReadCappedLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("a", 40)+"\nshort\r\n"), 16)
	long, err := readCappedLine(r)
	if err != nil || long != strings.Repeat("a", 16)+"…" {
		t.Fatalf("long line: %q, %v", long, err)
	}
	if short, err := readCappedLine(r); err != nil || short != "short" {
		t.Fatalf("next line: %q, %v", short, err)
	}
}

// TestClosingStdinIsAStop: mcp-go's Close of a session closes the
// process's stdin, and the client's Stop follows. A server that exits at
// once on stdin's end may be reaped before Stop begins (the closing
// goroutine descheduled, on a loaded machine): its exit is still a stop,
// not a crash, and its session is not reported lost. Here Stop comes only
// after the exit, so the test is red whenever the close alone does not
// mark the stop.
func TestClosingStdinIsAStop(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /bin/sh")
	}
	var skipped atomic.Uint64
	stoppedAtExit := make(chan bool, 1)
	p, err := Start(&Spec{Command: "/bin/sh", Args: []string{"-c", "cat >/dev/null"}, StopTimeout: time.Second},
		1<<20, slog.New(slog.DiscardHandler), &skipped, func(p *Process) { stoppedAtExit <- p.Stopping() })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var lost atomic.Pointer[error]
	if err := p.attach(func(err error) { lost.Store(&err) }); err != nil {
		t.Fatal(err)
	}
	if err := (stdinWriter{p}).Close(); err != nil { // as mcp-go's Close does
		t.Fatal(err)
	}
	if !p.HasExited(10 * time.Second) {
		t.Fatal("cat did not exit at stdin's end")
	}
	<-p.done // the loss, if any, is told before wait ends
	if stopped := <-stoppedAtExit; !stopped {
		t.Error("the exit caused by closing stdin was taken for a crash (Stopping false when it was reaped)")
	}
	if e := lost.Load(); e != nil {
		t.Errorf("the session was reported lost at its close: %v", *e)
	}
}
