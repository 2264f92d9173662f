package mapstore

import (
	"errors"
	"hash/fnv"
	"os"
	"syscall"
)

// Linux's open file description locks (fcntl F_OFD_*): held by the open
// file, not the process, so two of one process exclude each other, and
// released when the file is closed or its process ends, however it ends.
const (
	fOFDGetLk = 36
	fOFDSetLk = 37
)

// fileLockPath is the file beside an SQLite database whose byte-range locks
// stand in for the servers' named locks among processes: the database's own
// file carries SQLite's locks, which closing another descriptor of it would
// drop.
func fileLockPath(database string) string { return database + "-shardid-locks" }

// lockRange is the byte of the locks' file that stands for the lock name.
func lockRange(name string) syscall.Flock_t {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return syscall.Flock_t{Whence: 0, Start: int64(h.Sum64() >> 2), Len: 1} // within off_t, past any real offset
}

// lockFile takes the lock name among the processes that open database's
// locks file: unlock releases it; ok is false when another holds it. A locks
// file that cannot be opened (a read-only directory) leaves the lock to this
// process's stand-in: ok, and nothing to release.
func lockFile(database, name string) (unlock func(), ok bool, err error) {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(database); err == nil {
		mode = info.Mode().Perm() // as SQLite makes its journal: whoever may write the database may take its locks
	}
	f, err := os.OpenFile(fileLockPath(database), os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return func() {}, true, nil
	}
	lk := lockRange(name)
	lk.Type = syscall.F_WRLCK
	if err := syscall.FcntlFlock(f.Fd(), fOFDSetLk, &lk); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, false, nil
		}
		if errors.Is(err, syscall.EINVAL) { // a kernel before 3.15, without such locks
			return func() {}, true, nil
		}
		return nil, false, err
	}
	return func() { _ = f.Close() }, true, nil
}

// fileLockHeld reports whether a process holds the lock name of database's
// locks file (this one too, by another open file).
func fileLockHeld(database, name string) (bool, error) {
	f, err := os.Open(fileLockPath(database))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, nil // nobody could have locked it either
	}
	defer f.Close()
	lk := lockRange(name)
	lk.Type = syscall.F_WRLCK
	if err := syscall.FcntlFlock(f.Fd(), fOFDGetLk, &lk); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			return false, nil
		}
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}
