package stdio

import "time"

// Options are NewStdio's own options, as its option functions set them.
type Options struct {
	Env           []string // WithStdioEnv's, each KEY=value
	Dir           string   // WithStdioDir's; "": the agent's
	RestartLimit  int      // WithRestartLimit's; 0: DefaultRestartLimit in DefaultRestartWindow
	RestartWindow time.Duration
	StopTimeout   time.Duration // WithStdioStopTimeout's; 0: DefaultStopTimeout
	IdleStop      time.Duration // WithIdleStop's; 0: never
}

// The defaults, which the client exports as DefaultRestartLimit,
// DefaultRestartWindow and DefaultStdioStopTimeout; their comments there
// say why these.
const (
	DefaultRestartLimit  = 5
	DefaultRestartWindow = 10 * time.Second
	DefaultStopTimeout   = 2 * time.Second
)

// WithDefaults is o with the defaults in place of what was not given.
func (o Options) WithDefaults() Options {
	if o.RestartLimit == 0 {
		o.RestartLimit, o.RestartWindow = DefaultRestartLimit, DefaultRestartWindow
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	return o
}
