package client

import (
	"github.com/resilientmcp/resilientmcp/client/store"
)

// StoredListing is the last good answer to a listing or a read, as a
// ListingStore keeps it: store.StoredListing.
type StoredListing = store.StoredListing

// ListingStore keeps the last good answers to listings and reads
// (WithListingStore): store.ListingStore, which says what the client
// expects of one.
type ListingStore = store.ListingStore

// NewFileListingStore returns a ListingStore in dir, created (0700) if
// need be: one machine, surviving restarts of the agent. It is
// store.NewFileListingStore, which says how it keeps them; safe for
// concurrent use by any number of goroutines and processes of the machine.
func NewFileListingStore(dir string) (ListingStore, error) { return store.NewFileListingStore(dir) }
