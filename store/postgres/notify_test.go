package postgres

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
)

// TestListenReconnects kills Listen's connection from the server side and
// expects wake("") once it listens again, then ordinary wake-ups. With a
// fake clock that nobody advances too: the reconnection backoff waits in
// real time.
func TestListenReconnects(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]clock.Clock{
		"RealClock": clock.Real,
		"FakeClock": clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := migratedDatabase(t)
			s := openStore(t, url, c)
			wakes := listenUntilReady(t, s)
			conn := connect(t, url)

			for round := range 2 {
				var killed int
				err := conn.QueryRow(t.Context(), `
					SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE datname = current_database() AND application_name = $1`, listenAppName).Scan(&killed)
				if err != nil {
					t.Fatal(err)
				}
				if killed != 1 {
					t.Fatalf("round %d: terminated %d listen connections, want 1", round, killed)
				}
				waitWake(t, wakes, "")
				pollWake(t, s, wakes, "after-reconnect")
			}
		})
	}
}

// TestApplicationNames: the pool's sessions show as jobd in
// pg_stat_activity and Listen's as jobd-listen, so that an operator (or
// the chaos tier's fault injector) can find them; a URL's own
// application_name names both.
func TestApplicationNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, param, pool, listen string
	}{
		{"Default", "", poolAppName, listenAppName},
		{"FromURL", "application_name=mine", "mine", "mine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := migratedDatabase(t)
			conn := connect(t, url)
			if c.param != "" {
				sep := "?"
				if strings.Contains(url, "?") {
					sep = "&"
				}
				url += sep + c.param
			}
			s := openStore(t, url, clock.Real)
			listenUntilReady(t, s)
			rows, err := conn.Query(t.Context(), `
				SELECT DISTINCT application_name FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()
				ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			want := []string{c.pool, c.listen}
			slices.Sort(want)
			want = slices.Compact(want)
			if !slices.Equal(names, want) {
				t.Fatalf("application names %q, want %q", names, want)
			}
		})
	}
}
