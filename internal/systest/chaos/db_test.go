package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// database injects the faults that go through PostgreSQL itself, as its
// superuser.
type database struct {
	url string // the superuser's, database postgres
	// jobdURL is the superuser's on the nodes' database: a snapshot holds
	// back vacuum only in its own database.
	jobdURL string
}

// terminateJobd is the statement of the termination burst: every
// session of jobd's (the pool's are named jobd, Listen's jobd-listen).
const terminateJobd = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	WHERE application_name LIKE 'jobd%' AND pid <> pg_backend_pid()`

// terminateBurst terminates every jobd session rounds times, 200 ms
// apart, so that the sessions the nodes open again meanwhile go too.
func (d *database) terminateBurst(rounds int) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return "", false, err
	}
	defer conn.Close(ctx)
	total := 0
	for i := range rounds {
		if i > 0 {
			time.Sleep(200 * time.Millisecond) // the burst's spacing
		}
		var n int
		if err := conn.QueryRow(ctx, terminateJobd).Scan(&n); err != nil {
			return "", false, err
		}
		total += n
	}
	return fmt.Sprintf("%d sessions terminated in %d rounds", total, rounds), false, nil
}

// exhaust opens idle sessions until the server has no slot left but the
// superuser's reserved ones, terminates jobd's sessions so that the
// nodes must connect again, holds the sessions for hold, then closes
// them.
func (d *database) exhaust(hold time.Duration) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+hold)
	defer cancel()
	admin, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return "", false, err
	}
	defer admin.Close(context.Background())
	var maxConns, reserved, open int
	err = admin.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int,
		(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')`).Scan(&maxConns, &reserved, &open)
	if err != nil {
		return "", false, err
	}
	var held []*pgx.Conn
	defer func() {
		for _, c := range held {
			c.Close(context.Background())
		}
	}()
	// Up to the slots others may use; the nodes may take a few meanwhile:
	// the sessions that find the server full stop there.
	more, err := fill(ctx, d.url, maxConns-reserved-open)
	held = append(held, more...)
	if err != nil {
		return "", false, err
	}
	// The nodes keep the sessions they have: end them, and take the slots
	// they free before the nodes connect again (they win some back).
	var killed int
	if err := admin.QueryRow(ctx, terminateJobd).Scan(&killed); err != nil {
		return "", false, err
	}
	more, err = fill(ctx, d.url, killed)
	held = append(held, more...)
	if err != nil {
		return "", false, err
	}
	var left int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'jobd%'`).Scan(&left); err != nil {
		return "", false, err
	}
	time.Sleep(hold) // the fault's length
	return fmt.Sprintf("%d idle sessions of %d slots held %s; %d jobd sessions terminated, %d left to the nodes",
		len(held), maxConns-reserved, hold, killed, left), false, nil
}

// fill opens up to n idle sessions, fewer when the server runs out of
// slots first.
func fill(ctx context.Context, url string, n int) ([]*pgx.Conn, error) {
	var (
		mu    sync.Mutex
		held  []*pgx.Conn
		other error
		wg    sync.WaitGroup
	)
	next := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for range next {
				c, err := pgx.Connect(ctx, url)
				mu.Lock()
				switch {
				case err == nil:
					held = append(held, c)
				case !tooManyConnections(err):
					other = err
				}
				mu.Unlock()
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	if other != nil {
		return held, fmt.Errorf("open idle sessions: %w", other)
	}
	return held, nil
}

// tooManyConnections reports whether err is the server refusing a
// session for want of a slot.
func tooManyConnections(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53300"
}

// pinHorizon holds a REPEATABLE READ transaction's snapshot for hold:
// vacuum can remove no row version that died meanwhile. It runs beside
// the other database faults: a server restarting as it starts is waited
// for.
func (d *database) pinHorizon(hold time.Duration) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+hold)
	defer cancel()
	conn, err := connectWaiting(ctx, d.jobdURL)
	if err != nil {
		return "", false, err
	}
	defer conn.Close(context.Background())
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return "", false, err
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		return "", false, err
	}
	time.Sleep(hold) // the fault's length
	// A restart of the server meanwhile ends the transaction early.
	if err := tx.Rollback(ctx); err != nil {
		return fmt.Sprintf("snapshot held until the server dropped it (%v)", err), false, nil
	}
	return fmt.Sprintf("snapshot held %s", hold), false, nil
}

// connectWaiting connects to url, trying again while the server is
// unreachable (restarting), until ctx ends.
func connectWaiting(ctx context.Context, url string) (*pgx.Conn, error) {
	for {
		conn, err := pgx.Connect(ctx, url)
		var pgErr *pgconn.PgError
		if err == nil || ctx.Err() != nil || (errors.As(err, &pgErr) && !tooManyConnections(err) && pgErr.Code != "57P03") {
			return conn, err
		}
		select {
		case <-time.After(200 * time.Millisecond): // the server's restart
		case <-ctx.Done():
			return nil, err
		}
	}
}
