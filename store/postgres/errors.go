package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jobd/jobd/store"
)

// errorf is fmt.Errorf for the store's errors: every error a Store method
// returns goes through it, and it marks those of a database that cannot
// be reached with store.ErrUnavailable and those of a value the database
// refused with store.ErrRefused (see classify).
func errorf(format string, args ...any) error {
	return classify(fmt.Errorf(format, args...))
}

// classify marks err by its cause: store.ErrUnavailable when the database
// cannot be reached (unreachable), store.ErrRefused when it refused a
// value (refusedValue), store.ErrContended when a conflict failed it and
// the call may succeed if sent again; otherwise err is returned as it is.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case unreachable(err):
		return store.Mark(err, store.ErrUnavailable)
	case refusedValue(err):
		return store.Mark(err, store.ErrRefused)
	case deadlock(err) || serializationFailure(err) || uniqueViolation(err, "jobd_jobs_lock"):
		// A lock_key's unique violation comes only from a claim that lost
		// the race for the key past its retries (claimRetries).
		return store.Mark(err, store.ErrContended)
	}
	return err
}

// serializationFailure reports whether PostgreSQL failed err's statement
// for a serialization conflict (SQLSTATE 40001).
func serializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// unavailableStates are the SQLSTATEs of a server that is going away or
// not there yet: its connection exceptions (class 08), an administrator's
// or a crash's shutdown, and a server that is starting up or shutting
// down; and of one that has no connection slot left (for anyone, the
// role or the database) until others close theirs.
var unavailableStates = map[string]bool{
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
	"53300": true, // too_many_connections
}

// unreachable reports whether err says the database could not be reached
// or dropped the connection: a connection that could not be made (but not
// one the server refused for a reason of its own, such as a bad password
// or an unknown database), a server shutting down or starting up or out
// of connection slots, a connection refused, reset, closed or cut
// mid-answer.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableStates[pgErr.Code] || strings.HasPrefix(pgErr.Code, "08")
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connect):
		return true // no PgError inside: the server was not reached, or not in time
	case errors.As(err, &netErr):
		return true
	case errors.Is(err, pgconn.ErrConnClosed):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true // the server closed the connection mid-answer
	}
	return false
}

// refusedValue reports whether err is the server refusing a value a
// statement carried: a data exception (class 22: a NUL or an escape text
// and jsonb cannot hold, a malformed value) or a limit exceeded (class
// 54: a value too large).
func refusedValue(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "54"))
}
