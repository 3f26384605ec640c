package policy

import "fmt"

// AfterListingRestart decides whether a listing (the iterators over tools,
// prompts, resources) that has met restarts new sessions in a row (a
// re-initialization or a redial), each a page from a session opened after
// the listing began, starts over once more: a cursor of the old server
// means nothing to the new one. A server that is replaced under every
// listing must not hold the loop forever, so after max restarts
// (WithMaxAttempts) the listing gives up; nothing of it ran on the server,
// so it ends ErrUnavailable.
func AfterListingRestart(restarts, max int) Action {
	if restarts > max {
		return giveUp(fmt.Sprintf("the session was replaced under the listing %d times in a row", restarts))
	}
	return Action{}
}
