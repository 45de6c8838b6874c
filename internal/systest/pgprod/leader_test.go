package pgprod

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
)

// The hand-over run's shape: three nodes, one killed every killEvery.
const (
	handOverNodes = 3
	killEvery     = 4 * time.Second
)

// TestLeaderHandOver runs three `jobd serve` nodes with a schedule that
// ticks every second (catch_up none, the default: the strictest rule)
// and SIGKILLs a node every 4 s, the leader every other time, a random
// node otherwise, starting it again at once. Every tick from the first
// to the last has exactly one job: a dead leader is replaced by a node
// that was watching it (its presence lock), before the dead leader's
// term would have run out, and the ticks that fell due while the
// leadership changed hands run late, once each. On a jobd whose dead
// leader is replaced only when its term runs out (30 s), the ticks in
// between are missed.
func TestLeaderHandOver(t *testing.T) {
	if testing.Short() {
		t.Skip("the production PostgreSQL tier (real jobd serve nodes) runs without -short")
	}
	t.Parallel()
	window := 25 * time.Second
	if long {
		window = time.Minute
	}
	db := migrated.NewDatabase(t)
	dir := logDir(t)
	ctx := t.Context()
	args := []string{"--database", db, "--log-level", "info",
		"--schedules", `[{"name":"tick","cron":"@every 1s","job":{"kind":"noop","queue":"ticks"}}]`,
		"--workers", `[{"queue":"default","concurrency":1}]`}
	nodes := make([]*node, handOverNodes)
	gen := make([]int, handOverNodes)
	for i := range nodes {
		nodes[i] = startNode(t, dir, fmt.Sprintf("n%dg0", i), args...)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d, %s of kills every %s", seed, window, killEvery)
	var handOvers []time.Duration
	kills, leaderKills := 0, 0
	for begin := time.Now(); time.Since(begin) < window; kills++ {
		// The faults' pace, not a synchronisation.
		time.Sleep(killEvery)
		leader, termEnd, err := termHolder(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		victim := rng.IntN(handOverNodes)
		if kills%2 == 0 {
			victim = slices.IndexFunc(nodes, func(n *node) bool { return n.name == leader })
			if victim < 0 {
				t.Fatalf("kill %d: no node leads (holder %q)", kills, leader)
			}
		}
		killed := nodes[victim]
		at := time.Now()
		killed.kill()
		if killed.name == leader {
			leaderKills++
			took, next, early, err := waitNewLeader(ctx, conn, leader, termEnd)
			if err != nil {
				t.Fatalf("kill %d: %v", kills, err)
			}
			if !early {
				t.Errorf("kill %d: %s took over from %s once its term had run out, not when its presence ended", kills, next, leader)
			}
			handOvers = append(handOvers, time.Since(at))
			t.Logf("kill %d: leader %s SIGKILLed; %s leads %s later", kills, leader, next, took)
		} else {
			t.Logf("kill %d: %s SIGKILLed (%s leads)", kills, killed.name, leader)
		}
		gen[victim]++
		nodes[victim] = startNode(t, dir, fmt.Sprintf("n%dg%d", victim, gen[victim]), args...)
	}
	end := time.Now()
	// The schedule ticks on past the run: wait for a tick after it, so
	// that every tick of the run had its chance.
	ticks, err := waitTicks(ctx, conn, end.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var missed []string
	for i := 1; i < len(ticks); i++ {
		if gap := ticks[i].at.Sub(ticks[i-1].at); gap != time.Second {
			missed = append(missed, fmt.Sprintf("%s then %s", ticks[i-1].at.Format(time.TimeOnly), ticks[i].at.Format(time.TimeOnly)))
		}
	}
	var late time.Duration
	for _, tk := range ticks {
		late = max(late, tk.created.Sub(tk.at))
	}
	slices.Sort(handOvers)
	t.Logf("figures: %d kills (%d of the leader), %d ticks from %s to %s, hand-overs (kill to new term) %v, latest tick job created %s after its tick",
		kills, leaderKills, len(ticks), ticks[0].at.Format(time.TimeOnly), ticks[len(ticks)-1].at.Format(time.TimeOnly), handOvers, late.Round(time.Millisecond))
	if len(missed) > 0 {
		t.Errorf("ticks missed or repeated (each pair should be 1s apart): %v", missed)
	}
	if leaderKills == 0 {
		t.Error("no kill hit the leader")
	}
}

// termHolder reads the maintenance leader's node and the end of its term.
func termHolder(ctx context.Context, conn *pgx.Conn) (string, time.Time, error) {
	var node string
	var until time.Time
	err := conn.QueryRow(ctx, "SELECT node, expires_at FROM jobd_leaders WHERE name = 'maintenance' AND expires_at > now()").Scan(&node, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", time.Time{}, nil
	}
	return node, until, err
}

// waitNewLeader polls the term's holder until another node than dead
// holds it (for at most a minute, beyond the 30 s term of the default
// reaper interval), and returns how long that took, who, and whether it
// took over before dead's term would have run out (deadEnd, on the
// database's clock).
func waitNewLeader(ctx context.Context, conn *pgx.Conn, dead string, deadEnd time.Time) (time.Duration, string, bool, error) {
	start := time.Now()
	deadline := start.Add(time.Minute)
	for time.Now().Before(deadline) {
		var node string
		var early bool
		err := conn.QueryRow(ctx, "SELECT node, now() < $1 FROM jobd_leaders WHERE name = 'maintenance' AND expires_at > now()", deadEnd).Scan(&node, &early)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, "", false, err
		}
		if node != "" && node != dead {
			return time.Since(start), node, early, nil
		}
		time.Sleep(5 * time.Millisecond) // a poll bounded by the deadline
	}
	return 0, "", false, fmt.Errorf("no node took over from %s within a minute", dead)
}

// tick is one job of the schedule: its tick, and when it was inserted.
type tick struct{ at, created time.Time }

// waitTicks waits (at most a minute) until the schedule has a job for a
// tick at or after until, then returns them all, oldest first.
func waitTicks(ctx context.Context, conn *pgx.Conn, until time.Time) ([]tick, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		rows, err := conn.Query(ctx, "SELECT scheduled_for, created_at FROM jobd_jobs WHERE schedule = 'tick' ORDER BY scheduled_for, created_at")
		if err != nil {
			return nil, err
		}
		var ticks []tick
		var tk tick
		_, err = pgx.ForEachRow(rows, []any{&tk.at, &tk.created}, func() error {
			ticks = append(ticks, tk)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(ticks) > 0 && !ticks[len(ticks)-1].at.Before(until) {
			return ticks, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no tick at or after %s within a minute (%d ticks)", until.Format(time.TimeOnly), len(ticks))
		}
		time.Sleep(50 * time.Millisecond) // a poll bounded by the deadline
	}
}
