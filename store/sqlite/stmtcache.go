package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"
)

// maxCachedStmts bounds the statements one connection keeps prepared.
// jobd's statements are constant strings, a few dozen of them; the bound
// only guards against a caller that builds its SQL.
const maxCachedStmts = 256

// openCached returns a connector of dsn whose connections prepare each
// statement they run once and keep it: the driver otherwise parses and
// plans a statement's text on every call, which was more than a third of
// the CPU time of an insert and a claim of one job.
func openCached(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return stmtCacheConnector{base: base}, nil
}

// stmtCacheConnector opens connections that keep their statements
// prepared (stmtCacheConn).
type stmtCacheConnector struct{ base driver.Connector }

// baseConn is what the SQLite driver's connections offer that database/sql
// uses.
type baseConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// Connect opens a connection of the driver's.
func (c stmtCacheConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	bc, ok := conn.(baseConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite: the driver's connection (%T) lacks a method database/sql needs", conn)
	}
	return &stmtCacheConn{baseConn: bc, stmts: make(map[string]*cachedStmt)}, nil
}

// Driver returns the driver's Driver.
func (c stmtCacheConnector) Driver() driver.Driver { return c.base.Driver() }

// stmtCacheConn is a connection that runs each statement text from the
// statement it prepared for it the first time. database/sql uses a
// connection from one goroutine at a time; a statement still being read
// (its rows not yet closed) is not run again meanwhile: a second use of
// its text runs uncached.
type stmtCacheConn struct {
	baseConn
	stmts map[string]*cachedStmt
}

// cachedStmt is a prepared statement and whether its rows are being read.
type cachedStmt struct {
	stmt preparedStmt
	busy bool
}

// preparedStmt is what the SQLite driver's statements offer.
type preparedStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// take returns the prepared statement of query, marked busy, or nil when
// the text runs uncached: the statement is busy, the cache full, or the
// text does not prepare (its error is then the uncached run's to report).
func (c *stmtCacheConn) take(ctx context.Context, query string) *cachedStmt {
	st, ok := c.stmts[query]
	if !ok {
		if len(c.stmts) >= maxCachedStmts {
			return nil
		}
		ds, err := c.baseConn.PrepareContext(ctx, query)
		if err != nil {
			return nil
		}
		prepared, ok := ds.(preparedStmt)
		if !ok {
			ds.Close()
			return nil
		}
		st = &cachedStmt{stmt: prepared}
		c.stmts[query] = st
	}
	if st.busy {
		return nil
	}
	st.busy = true
	return st
}

// ExecContext runs query from its prepared statement.
func (c *stmtCacheConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st := c.take(ctx, query)
	if st == nil {
		return c.baseConn.ExecContext(ctx, query, args)
	}
	defer func() { st.busy = false }()
	return st.stmt.ExecContext(ctx, args)
}

// QueryContext runs query from its prepared statement; the statement is
// free again once its rows are closed.
func (c *stmtCacheConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st := c.take(ctx, query)
	if st == nil {
		return c.baseConn.QueryContext(ctx, query, args)
	}
	rows, err := st.stmt.QueryContext(ctx, args)
	if err != nil {
		st.busy = false
		return nil, err
	}
	return &cachedRows{Rows: rows, st: st}, nil
}

// PrepareContext lends the prepared statement of query until the
// caller closes it.
func (c *stmtCacheConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st := c.take(ctx, query)
	if st == nil {
		return c.baseConn.PrepareContext(ctx, query)
	}
	return &lentStmt{preparedStmt: st.stmt, st: st}, nil
}

// Prepare is PrepareContext without a context.
func (c *stmtCacheConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Close finalizes the prepared statements and closes the connection.
func (c *stmtCacheConn) Close() error {
	for query, st := range c.stmts {
		st.stmt.Close()
		delete(c.stmts, query)
	}
	return c.baseConn.Close()
}

// cachedRows are the rows of a prepared statement, which they free when
// closed.
type cachedRows struct {
	driver.Rows
	st *cachedStmt
}

// Close closes the rows (the driver resets the statement for its next
// run) and frees the statement.
func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.st != nil {
		r.st.busy = false
		r.st = nil
	}
	return err
}

// lentStmt is a prepared statement lent to database/sql (a Prepare):
// closing it frees it for the next use instead of finalizing it.
type lentStmt struct {
	preparedStmt
	st *cachedStmt
}

// Close frees the statement.
func (s *lentStmt) Close() error {
	if s.st != nil {
		s.st.busy = false
		s.st = nil
	}
	return nil
}
