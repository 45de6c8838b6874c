package job

import "fmt"

// ChildParams is a child a running job spawns (see durable.go): a job
// submission with the key the parent names it by, unique per parent.
// Spawning is idempotent per key: a parent that runs again and spawns a
// key it spawned before gets that child, not a second one.
type ChildParams struct {
	Key string
	InsertParams
}

// childField names a field of the child at index i ("" for the child
// itself).
func childField(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("children[%d]", i)
	}
	return fmt.Sprintf("children[%d].%s", i, field)
}

// NormalizeChildren checks children as submissions (each's InsertParams
// normalised, defaults filled), refusing, with a *ValidationError naming
// the child's field, a missing or repeated key, an idempotency key or a
// unique rule (a child is deduplicated by its key), and more than
// maxChildren at once (0: DefaultMaxChildren).
func NormalizeChildren(children []ChildParams, maxArgs, maxChildren int) error {
	if maxChildren <= 0 {
		maxChildren = DefaultMaxChildren
	}
	switch n := len(children); {
	case n == 0:
		return Invalid("children", "must hold at least one child")
	case n > maxChildren:
		return Invalid("children", "holds %d children, over the limit of %d a job may spawn", n, maxChildren)
	}
	seen := make(map[string]int, len(children))
	for i := range children {
		c := &children[i]
		if c.Key == "" {
			return Invalid(childField(i, "key"), "is required")
		}
		if err := CheckName(childField(i, "key"), c.Key); err != nil {
			return err
		}
		if j, dup := seen[c.Key]; dup {
			return Invalid(childField(i, "key"), "%q is the key of children[%d] too: keys are unique per parent", c.Key, j)
		}
		seen[c.Key] = i
		if c.IdempotencyKey != "" {
			return Invalid(childField(i, "idempotency_key"), "must be empty: a child is deduplicated by its key")
		}
		if c.Unique != UniqueNone {
			return Invalid(childField(i, "unique"), "must be empty: a child is deduplicated by its key")
		}
		if _, err := c.InsertParams.Normalize(maxArgs); err != nil {
			if ve, ok := err.(*ValidationError); ok {
				return &ValidationError{Field: childField(i, ve.Field), Reason: ve.Reason}
			}
			return fmt.Errorf("%s: %w", childField(i, ""), err)
		}
	}
	return nil
}
