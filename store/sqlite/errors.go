package sqlite

import (
	"errors"
	"fmt"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jobd/jobd/store"
)

// errorf is fmt.Errorf for the store's errors: every error a Store method
// returns goes through it, and it marks those of a database file that
// cannot be used now with store.ErrUnavailable and those of a value SQLite
// refused with store.ErrRefused (see classify).
func errorf(format string, args ...any) error {
	return classify(fmt.Errorf(format, args...))
}

// classify marks err by SQLite's result code:
//
//   - store.ErrUnavailable when the file cannot be read or written now,
//     for a reason outside the database that may pass: an I/O error
//     (SQLITE_IOERR: a disk or a mount that went away), a file that
//     cannot be opened (SQLITE_CANTOPEN), a full disk (SQLITE_FULL).
//   - store.ErrRefused when SQLite refused a value: one over its length
//     limit (SQLITE_TOOBIG).
//
// SQLITE_BUSY after the busy timeout is neither: the database answers,
// but another connection, maybe of another process, held its write lock
// for longer than the timeout, which is a fault of the set-up (two
// programs writing one file) more than an outage; it stays as it is.
func classify(err error) error {
	var e *sqlitedrv.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL:
		return store.Mark(err, store.ErrUnavailable)
	case sqlite3.SQLITE_TOOBIG:
		return store.Mark(err, store.ErrRefused)
	}
	return err
}
