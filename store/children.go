package store

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// Children (see DurableStore.JobSpawn): a child's end wakes its parent
// waiting for its children, in the transaction of that end, as a
// dependency's end releases a workflow task. The step that does it runs
// wherever the workflow step runs (JobFinish's general path, JobRescue,
// JobTimeOut, JobCancel), for the ends of children (TaskEnd.Parent set):
// it locks their parents, in id order, after every other row the
// transaction locks (the ended jobs, the dependents, the workflows), and
// counts each parent's children not final in a statement of its own,
// after the lock, so that of concurrent ends of one parent's children,
// on any node, each reads what the one before it left and exactly one
// sees none left. A parent's wait (JobWait) locks the parent and counts
// its children the same way, so a child that ends while its parent
// starts to wait is counted by one of them. A workflow's cancel locks
// its tasks in id order, a child's parent among them, before its
// workflow: on PostgreSQL it can deadlock with the end of a child of
// that workflow, and either side runs its transaction again.

// SpawnParams says what JobSpawn spawns.
type SpawnParams struct {
	Children []job.ChildParams
	// MaxChildren bounds the children of one parent, those it spawned
	// before included (0: job.DefaultMaxChildren).
	MaxChildren int
}

// Limit is the most children a parent may have.
func (p SpawnParams) Limit() int {
	if p.MaxChildren > 0 {
		return p.MaxChildren
	}
	return job.DefaultMaxChildren
}

// TooManyChildren is the error of a spawn past the parent's limit.
func TooManyChildren(have, adding, limit int) error {
	return job.Invalid("children", "the job has %d children and spawns %d more, over the limit of %d", have, adding, limit)
}

// ChildRef is the ref in its workflow of the child key of a workflow
// task whose ref is parentRef: a spawned child of a task is a task of
// the same workflow, shown in its graph.
func ChildRef(parentRef, key string) string { return parentRef + "/" + key }

// ParentNode is a parent as the children's step reads it: its facts,
// read with its row locked, its queue, and how many of its children a
// statement after the lock counted not final.
type ParentNode struct {
	ID    uuid.UUID
	Queue string
	job.Facts
	NotFinal int
}

// ParentsOf returns the parents of the children that ends take to a
// final state, in id order (the order the step locks them in).
func ParentsOf(ends []TaskEnd) []uuid.UUID {
	var out []uuid.UUID
	for _, e := range ends {
		if e.Parent != uuid.Nil && e.Ended() && !slices.Contains(out, e.Parent) {
			out = append(out, e.Parent)
		}
	}
	slices.SortFunc(out, compareUUID)
	return out
}

// DecideParents decides what the ends of children do to their parents
// (job.ChildrenEnded), at now. counted says whether the parents'
// NotFinal counts still count the children ends take to a final state
// (a driver that counts before it applies them): those are taken off.
// A parent not waiting for its children is left alone.
func DecideParents(parents []ParentNode, ends []TaskEnd, counted bool, now time.Time) ([]TaskDecided, error) {
	var out []TaskDecided
	for _, p := range parents {
		pending := p.NotFinal
		if counted {
			for _, e := range ends {
				if e.Parent == p.ID && e.Ended() {
					pending--
				}
			}
		}
		t, write, err := job.ChildrenEnded(p.Facts, max(pending, 0), now)
		if err != nil {
			return nil, err
		}
		if write {
			out = append(out, TaskDecided{ID: p.ID, Queue: p.Queue, Transition: t})
		}
	}
	return out, nil
}
