package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/store"
)

// noBound is the room of a partition no limit bounds.
const noBound = math.MaxInt

// flowLimits is what one claim of a limited queue may hand out, read in
// its write transaction (which holds the file's write lock, so nothing it
// counted changes before the claim commits), and the rate state it
// advances by what it claims.
type flowLimits struct {
	// room is the most the claim hands out: the least of its Max, the
	// queue's global room and its rate's allowance.
	room int
	// rooms is the room of each partition that has running jobs or flow
	// state in force; fresh that of any other (noBound: none).
	rooms map[string]int
	fresh int
	// blocked are the partitions that can start nothing now, which the
	// candidates' walk skips.
	blocked []string
	// taken counts what the claim took of each partition (admit).
	taken map[string]int

	rate        *flow.Rate // nil for none
	byPartition bool       // the rate is by partition_key
	now         time.Time
	queueTat    time.Time            // the whole queue's rate state (zero: none)
	tats        map[string]time.Time // each partition's (absent: none)
}

// flowSettings is a queue's settings row as a claim reads it.
type flowSettings struct {
	paused, limited                bool
	global, partition              sql.NullInt64
	rateLimit, ratePeriodUS, burst sql.NullInt64
	rateBy, throttleBy             sql.NullString
	rateTat, throttledUntil        sql.NullInt64
}

// readFlowLimits reads what a claim of params.Queue may hand out, when
// the queue is limited and neither paused nor throttled; nil otherwise,
// and then nothing is to be claimed. It records in counted whether the
// queue counts its running jobs: a claim refused for want of room waits
// for a job's end to wake it.
func readFlowLimits(ctx context.Context, tx *jobWrite, params store.ClaimParams, counted *countedQueues) (*flowLimits, error) {
	var st flowSettings
	err := tx.QueryRowContext(ctx, flowSettingsSQL, sql.Named("queue", params.Queue)).Scan(&st.paused, &st.limited,
		&st.global, &st.partition, &st.rateLimit, &st.ratePeriodUS, &st.rateBy, &st.burst, &st.throttleBy,
		&st.rateTat, &st.throttledUntil)
	if errors.Is(err, sql.ErrNoRows) {
		counted.set(params.Queue, false)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the queue's limits: %w", err)
	}
	counted.set(params.Queue, st.limited && (st.global.Valid || st.partition.Valid))
	if !st.limited || st.paused || (st.throttledUntil.Valid && st.throttledUntil.Int64 > tx.now) {
		return nil, nil
	}
	l := &flowLimits{room: params.Max, rooms: make(map[string]int), fresh: noBound,
		taken: make(map[string]int), now: fromMicro(tx.now), tats: make(map[string]time.Time)}
	if st.rateLimit.Valid && st.ratePeriodUS.Valid {
		l.rate = &flow.Rate{Limit: int(st.rateLimit.Int64), Period: time.Duration(st.ratePeriodUS.Int64) * time.Microsecond,
			By: st.rateBy.String, Burst: int(st.burst.Int64)}
		l.byPartition = st.rateBy.Valid
		if st.rateTat.Valid && !l.byPartition {
			l.queueTat = fromMicro(st.rateTat.Int64)
		}
	}

	running, total := make(map[string]int), 0
	if st.global.Valid || st.partition.Valid {
		if running, total, err = readRunning(ctx, tx, params.Queue); err != nil {
			return nil, err
		}
	}
	throttled := make(map[string]bool)
	if err := readPartitions(ctx, tx, params.Queue, func(key string, tat, until sql.NullInt64) {
		if st.throttleBy.Valid && until.Valid && until.Int64 > tx.now {
			throttled[key] = true
		}
		if l.byPartition && tat.Valid {
			l.tats[key] = fromMicro(tat.Int64)
		}
	}); err != nil {
		return nil, err
	}

	if st.global.Valid {
		l.room = min(l.room, int(st.global.Int64)-total)
	}
	if l.rate != nil && !l.byPartition {
		l.room = min(l.room, allowed(*l.rate, l.queueTat, l.now))
	}
	if l.room <= 0 {
		return nil, nil
	}
	// The room of a partition: its limit less what runs in it, its rate's
	// allowance, none while it is throttled.
	roomOf := func(running int, tat time.Time, throttled bool) int {
		room := noBound
		if st.partition.Valid {
			room = int(st.partition.Int64) - running
		}
		if l.byPartition {
			room = min(room, allowed(*l.rate, tat, l.now))
		}
		if throttled {
			room = 0
		}
		return room
	}
	l.fresh = roomOf(0, time.Time{}, false)
	keys := make(map[string]bool)
	for key := range running {
		keys[key] = true
	}
	for key := range throttled {
		keys[key] = true
	}
	for key := range l.tats {
		keys[key] = true
	}
	for key := range keys {
		room := roomOf(running[key], l.tats[key], throttled[key])
		l.rooms[key] = room
		if room <= 0 {
			l.blocked = append(l.blocked, key)
		}
	}
	return l, nil
}

// allowed is how many starts r allows at now after tat (flow.Allowance).
func allowed(r flow.Rate, tat, now time.Time) int {
	n, _ := flow.Allowance(r, tat, now, math.MaxInt)
	return n
}

// admit reports whether a candidate of partition may be claimed, and
// counts it when it may.
func (l *flowLimits) admit(partition string) bool {
	room, ok := l.rooms[partition]
	if !ok {
		room = l.fresh
	}
	if l.taken[partition] >= room {
		return false
	}
	l.taken[partition]++
	return true
}

// advance moves the rate's state on by the jobs claimed, of partitions:
// flow.Allowance's theoretical arrival time, rounded up to the
// microsecond the database keeps (never earlier than the rate says).
func (l *flowLimits) advance(ctx context.Context, tx *jobWrite, queue string, partitions []string) error {
	if l.rate == nil || len(partitions) == 0 {
		return nil
	}
	if !l.byPartition {
		_, next := flow.Allowance(*l.rate, l.queueTat, l.now, len(partitions))
		if _, err := tx.ExecContext(ctx, flowRateQueueSQL, sql.Named("queue", queue), sql.Named("tat", ceilMicro(next))); err != nil {
			return fmt.Errorf("advance the queue's rate: %w", err)
		}
		return nil
	}
	claimed := make(map[string]int)
	for _, p := range partitions {
		claimed[p]++
	}
	type state struct {
		Key string `json:"key"`
		Tat int64  `json:"tat"`
	}
	batch := make([]state, 0, len(claimed))
	for key, n := range claimed {
		_, next := flow.Allowance(*l.rate, l.tats[key], l.now, n)
		batch = append(batch, state{Key: key, Tat: ceilMicro(next)})
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, flowRatePartitionsSQL, sql.Named("queue", queue), sql.Named("batch", string(body))); err != nil {
		return fmt.Errorf("advance the partitions' rates: %w", err)
	}
	return nil
}

// ceilMicro is t in unix microseconds, rounded up.
func ceilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if t.Nanosecond()%1000 != 0 {
		us++
	}
	return us
}

// readRunning counts the running jobs of queue by partition.
func readRunning(ctx context.Context, tx *jobWrite, queue string) (map[string]int, int, error) {
	rows, err := tx.QueryContext(ctx, flowRunningSQL, sql.Named("queue", queue))
	if err != nil {
		return nil, 0, fmt.Errorf("count running jobs: %w", err)
	}
	defer rows.Close()
	running, total := make(map[string]int), 0
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return nil, 0, fmt.Errorf("count running jobs: %w", err)
		}
		running[key]++
		total++
	}
	return running, total, rows.Err()
}

// readPartitions calls fn with each partition of queue that has flow
// state in force.
func readPartitions(ctx context.Context, tx *jobWrite, queue string, fn func(key string, tat, until sql.NullInt64)) error {
	rows, err := tx.QueryContext(ctx, flowPartitionsSQL, sql.Named("queue", queue), sql.Named("now", tx.now))
	if err != nil {
		return fmt.Errorf("read the partitions' state: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key        string
			tat, until sql.NullInt64
		)
		if err := rows.Scan(&key, &tat, &until); err != nil {
			return fmt.Errorf("read the partitions' state: %w", err)
		}
		fn(key, tat, until)
	}
	return rows.Err()
}
