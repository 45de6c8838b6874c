package postgres

import (
	"testing"
	"time"

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
