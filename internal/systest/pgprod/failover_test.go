package pgprod

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store/postgres"
)

// TestFailover runs two `jobd serve` nodes on a primary with a
// synchronous standby, given both hosts (target_session_attrs=read-write:
// the standby refuses writes until it is promoted), and submits jobs
// through both nodes while the primary is killed (pg_ctl stop -m
// immediate) and the standby promoted. The nodes reconnect to the new
// primary by themselves; every job whose submit was acknowledged (201)
// exists there and succeeds, and none succeeded twice (its journal holds
// one success). The jobs running at the kill keep their leases on the
// new primary (the standby had every committed claim) or are rescued
// when they expire (a 5 s lease).
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("the production PostgreSQL tier (real jobd serve nodes) runs without -short")
	}
	t.Parallel()
	before, after := 2*time.Second, 3*time.Second
	if long {
		before, after = 15*time.Second, 20*time.Second
	}
	primary, standby := pgtest.NewReplicated(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, primary.URL())
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE jobd")
	admin.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	both := fmt.Sprintf("postgres://postgres@%s,%s/jobd?sslmode=disable&target_session_attrs=read-write", primary.HostPort(), standby.HostPort())
	dir := logDir(t)
	args := []string{"--database", both, "--workers", `[{"queue":"default","concurrency":8}]`,
		"--reaper-interval", "1s", "--heartbeat-interval", "500ms"}
	nodes := []*node{startNode(t, dir, "f0", args...), startNode(t, dir, "f1", args...)}

	var sub submitter
	subCtx, stopSubmitting := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, n := range nodes {
		c, err := client.New(n.url(), "", client.WithoutRetries())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { sub.run(subCtx, c) })
	}
	time.Sleep(before) // the load's length before the fault, not a synchronisation
	killed := time.Now()
	primary.Stop(t)
	standby.Promote(t)
	promoted := time.Now()
	t.Logf("primary killed; standby promoted %s later", promoted.Sub(killed).Round(time.Millisecond))
	time.Sleep(after) // the load's length after the fault
	stopSubmitting()
	wg.Wait()
	acked := sub.acknowledged()
	if len(acked) == 0 {
		t.Fatal("no submit was acknowledged")
	}

	u := fmt.Sprintf("postgres://postgres@%s/jobd?sslmode=disable", standby.HostPort())
	st, err := postgres.Open(ctx, u, postgres.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var found int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM jobd_jobs WHERE id = ANY($1)", acked).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found != len(acked) {
		t.Errorf("%d acknowledged jobs, %d found on the promoted standby", len(acked), found)
	}
	waitAllSucceeded(t, st, acked)
	twice, again := 0, 0
	for _, id := range acked {
		evs, err := st.JobEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		succeeded, claims := 0, 0
		for _, ev := range evs {
			switch ev.Kind {
			case job.EventSucceeded:
				succeeded++
			case job.EventClaimed:
				claims++
			}
		}
		if succeeded != 1 {
			twice++
			t.Errorf("job %s: %d successes in its journal, want 1", id, succeeded)
		}
		if claims > 1 {
			again++
		}
	}
	// The nodes found the new primary by themselves: jobs were submitted
	// and claimed there.
	var afterPromotion int
	var firstClaim time.Time
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE created_at >= $1), coalesce(min(attempted_at) FILTER (WHERE attempted_at >= $1), 'epoch')
		FROM jobd_jobs WHERE id = ANY($2)`, promoted, acked).Scan(&afterPromotion, &firstClaim)
	if err != nil {
		t.Fatal(err)
	}
	if afterPromotion == 0 {
		t.Error("no submit was acknowledged after the promotion")
	}
	t.Logf("figures: %d submits acknowledged (%d after the promotion; %d refused during the failover), %d found, %d succeeded twice, %d claimed more than once; first claim %s after the promotion returned",
		len(acked), afterPromotion, sub.failures(), found, twice, again, firstClaim.Sub(promoted).Round(time.Millisecond))
}

// submitter submits jobs through nodes, keeping the ids of those
// acknowledged.
type submitter struct {
	mu     sync.Mutex
	acked  []uuid.UUID
	failed int
}

// run submits sleep jobs through c, one at a time, until ctx ends.
func (s *submitter) run(ctx context.Context, c *client.Client) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		j, _, err := c.Submit(cctx, api.SubmitRequest{Kind: "sleep", Args: json.RawMessage(`{"ms":5}`), LeaseTTL: api.Duration(5 * time.Second)})
		cancel()
		s.mu.Lock()
		if err == nil {
			s.acked = append(s.acked, j.ID)
		} else if ctx.Err() == nil {
			s.failed++
		}
		s.mu.Unlock()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond): // a failing node is not hammered
			}
		}
	}
}

func (s *submitter) acknowledged() []uuid.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uuid.UUID(nil), s.acked...)
}

func (s *submitter) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
