// Package atomicfile writes a file so that a reader, or a process started
// after a crash, sees either the old contents or the new, never half of
// them: the durable stores of the module (auth's FileStore for grants,
// client/store's file stores of tasks and listings) share it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces dir/name with data: written to a temporary file of dir
// (0600, created next to it so that the rename stays on one file system),
// synced, renamed over the old file, and the directory synced so that the
// rename itself survives a crash.
func Write(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, name+".*.tmp") // 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a failure; gone already after the rename
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		return err
	}
	SyncDir(dir)
	return nil
}

// SyncDir syncs a directory, so that a rename or a removal in it survives
// a crash. Best effort: not every file system can sync a directory.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
