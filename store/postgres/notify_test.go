package postgres

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
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

// TestParseWake: a wake-up's payload is a queue name, or an insert's queue
// name and bound of claim order (insert.sql); a bound that does not read
// is dropped, never misread, and the queue name is kept.
func TestParseWake(t *testing.T) {
	at := time.UnixMicro(1_700_000_000_123_456)
	for _, tc := range []struct {
		payload string
		want    store.Notification
	}{
		{"mail", store.Notification{Queue: "mail"}},
		{"mail\x1f7\x1f1700000000123456", store.Notification{Queue: "mail", Earliest: &store.ClaimBound{Priority: 7, RunAt: at}}},
		{"a queue\x1f0\x1f-5", store.Notification{Queue: "a queue", Earliest: &store.ClaimBound{Priority: 0, RunAt: time.UnixMicro(-5)}}},
		{"mail\x1f7", store.Notification{Queue: "mail"}},
		{"mail\x1fx\x1f1700000000123456", store.Notification{Queue: "mail"}},
		{"mail\x1f7\x1f1.5", store.Notification{Queue: "mail"}},
		{"mail\x1f7\x1f1\x1f2", store.Notification{Queue: "mail"}},
	} {
		got := parseWake(tc.payload)
		if got.Queue != tc.want.Queue || (got.Earliest == nil) != (tc.want.Earliest == nil) ||
			got.Earliest != nil && (got.Earliest.Priority != tc.want.Earliest.Priority || !got.Earliest.RunAt.Equal(tc.want.Earliest.RunAt)) {
			t.Errorf("parseWake(%q) = %+v (earliest %+v), want %+v (earliest %+v)", tc.payload, got, got.Earliest, tc.want, tc.want.Earliest)
		}
	}
}
