package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestQueuesSet: jobd queues set changes the limits its flags name (on
// the command line, before or after the queue's name, or in the
// environment), --clear clears them, and jobd queues lists them with the
// queue's throttle; bad flags exit 2, a limit the server refuses 1.
func TestQueuesSet(t *testing.T) {
	eachServer(t, func(t *testing.T, s *apiServer) {
		must := func(args ...string) string {
			t.Helper()
			code, out, errOut := s.run(t, args...)
			if code != 0 {
				t.Fatalf("jobd %s: exit %d; stderr %q", strings.Join(args, " "), code, errOut)
			}
			return out
		}
		if out := must("queues", "set", "mail", "--global-limit", "5", "--rate", "20/s"); out != "queue mail limits: global_limit=5 rate=20/1s\n" {
			t.Errorf("set printed %q", out)
		}
		if out := must("queues", "set", "--partition-limit", "2", "mail", "--rate-by", "partition_key", "--rate-burst", "4"); out !=
			"queue mail limits: global_limit=5 partition_limit=2 rate=20/1s rate_by=partition_key burst=4\n" {
			t.Errorf("set of more printed %q", out)
		}
		s.env["JOBD_THROTTLE_BY"] = "partition_key"
		if out := must("queues", "set", "mail", "--rate", "100/1m"); out !=
			"queue mail limits: global_limit=5 partition_limit=2 rate=100/1m rate_by=partition_key burst=4 throttle_by=partition_key\n" {
			t.Errorf("set with JOBD_THROTTLE_BY printed %q", out)
		}
		delete(s.env, "JOBD_THROTTLE_BY")

		var q api.Queue
		if err := json.Unmarshal([]byte(must("queues", "set", "--json", "mail", "--global-limit", "0")), &q); err != nil ||
			q.GlobalLimit != 0 || q.PartitionLimit != 2 || q.Rate == nil || time.Duration(q.Rate.Period) != time.Minute ||
			q.Rate.By != "partition_key" || q.Rate.Burst != 4 || q.ThrottleBy != "partition_key" {
			t.Errorf("set --json: %+v, %v", q, err)
		}
		var list api.QueueList
		if err := json.Unmarshal([]byte(must("queues", "--json")), &list); err != nil || len(list.Queues) != 1 ||
			list.Queues[0].PartitionLimit != 2 || list.Queues[0].ThrottledPartitions == nil {
			t.Errorf("queues --json: %+v, %v", list, err)
		}

		// A throttled outcome shows in the list.
		if _, err := s.store.JobInsertMany(context.Background(), []job.InsertParams{{Kind: "k", Queue: "mail", PartitionKey: "p1"}}); err != nil {
			t.Fatal(err)
		}
		j := s.claim(t, "mail")
		if _, err := s.store.JobFinish(context.Background(), []store.Outcome{{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "429", Throttle: time.Hour}}}); err != nil {
			t.Fatal(err)
		}
		row := regexp.MustCompile(`(?m)^mail\s+false\s+1\s+0\s+0\s+0\s+0\s+partition_limit=2 rate=100/1m rate_by=partition_key burst=4 throttle_by=partition_key\s+1 partition$`)
		if out := must("queues"); !row.MatchString(out) || !strings.Contains(out, "LIMITS") || !strings.Contains(out, "THROTTLED") {
			t.Errorf("queues printed %q", out)
		}

		if out := must("queues", "set", "mail", "--rate", "none", "--throttle-by", "queue"); out != "queue mail limits: partition_limit=2\n" {
			t.Errorf("set --rate none printed %q", out)
		}
		if out := must("queues", "set", "mail", "--clear", "--global-limit", "3"); out != "queue mail limits: global_limit=3\n" {
			t.Errorf("set --clear --global-limit printed %q", out)
		}
		if out := must("queues", "set", "mail", "--clear"); out != "queue mail limits: none\n" {
			t.Errorf("set --clear printed %q", out)
		}

		for _, args := range [][]string{
			{"queues", "set"}, {"queues", "set", "mail"}, {"queues", "set", "mail", "extra", "--clear"},
			{"queues", "set", "mail", "--rate", "5"}, {"queues", "set", "mail", "--rate", "5/soon"}, {"queues", "set", "mail", "--rate", "0/s"},
			{"queues", "set", "mail", "--rate-by", "tenant"}, {"queues", "set", "mail", "--global-limit", "-1"},
			{"queues", "set", "mail", "--rate-burst", "2"}, {"queues", "--json", "set", "mail", "--clear"},
		} {
			if code, _, errOut := s.run(t, args...); code != 2 {
				t.Errorf("jobd %s: exit %d, want 2 (%s)", strings.Join(args, " "), code, errOut)
			}
		}
		if code, _, errOut := s.run(t, "queues", "set", "mail", "--global-limit", "2000000"); code != 1 || !strings.Contains(errOut, "global_limit") {
			t.Errorf("a limit the server refuses: exit %d, stderr %q", code, errOut)
		}
	})
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"100/1m": "100/1m", "20/s": "20/1s", "5/500ms": "5/500ms", "1/h": "1/1h", "3/90m": "3/1h30m"} {
		r, err := parseRate(in)
		if err != nil || r == nil {
			t.Errorf("parseRate(%q): %v", in, err)
			continue
		}
		if got := limitsText(api.QueueLimits{Rate: r}); got != "rate="+want {
			t.Errorf("parseRate(%q) shows %q, want rate=%s", in, got, want)
		}
	}
	if r, err := parseRate("none"); r != nil || err != nil {
		t.Errorf("parseRate(none) = %v, %v", r, err)
	}
}
