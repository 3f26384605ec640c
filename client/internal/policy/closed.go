package policy

// AfterClose accounts for an attempt that failed with v because Close
// closed its session under it: the call ends (ErrClosed), and it may have
// run if the request was completely written, even though the failure
// itself (a cancelled request) would not say so: Close cut it, not the
// server.
func (r *Retries) AfterClose(v Verdict) {
	r.MayHaveRun = r.MayHaveRun || v.Sent || v.MayHaveRun()
}
