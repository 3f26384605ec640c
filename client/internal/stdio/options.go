package stdio

import "time"

// Options are NewStdio's own options, as its option functions set them.
type Options struct {
	Env           []string // WithStdioEnv's, each KEY=value
	Dir           string   // WithStdioDir's; "": the agent's
	RestartLimit  int      // WithRestartLimit's; 0: the default, in the default window
	RestartWindow time.Duration
	StopTimeout   time.Duration // WithStdioStopTimeout's; 0: the default
	IdleStop      time.Duration // WithIdleStop's; 0: never
}

// WithDefaults is o with the defaults d (the client's exported
// DefaultRestartLimit, DefaultRestartWindow and DefaultStdioStopTimeout)
// in place of what was not given.
func (o Options) WithDefaults(d Options) Options {
	if o.RestartLimit == 0 {
		o.RestartLimit, o.RestartWindow = d.RestartLimit, d.RestartWindow
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = d.StopTimeout
	}
	return o
}
