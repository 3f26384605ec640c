//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package filelock

import "os"

func tryLock(string) (*os.File, error) { return nil, ErrUnsupported }
