package store

import "context"

// txKey marks the contexts InTx gives its fn, with the transactions'
// owners.
type txKey struct{}

// txMark is one open transaction of owner, within those of outer.
type txMark struct {
	owner any
	outer *txMark
}

// TxContext returns ctx marked as the context of a transaction of owner
// (a Store), for a driver's InTx to give its fn: a call on owner with it
// (or a context derived from it) then fails with ErrCalledInTx (see
// CheckNotInTx).
func TxContext(ctx context.Context, owner any) context.Context {
	outer, _ := ctx.Value(txKey{}).(*txMark)
	return context.WithValue(ctx, txKey{}, &txMark{owner: owner, outer: outer})
}

// CheckNotInTx returns ErrCalledInTx when ctx is, or derives from, the
// context of a transaction of owner: a driver calls it before a Store
// method reaches the database.
func CheckNotInTx(ctx context.Context, owner any) error {
	for m, _ := ctx.Value(txKey{}).(*txMark); m != nil; m = m.outer {
		if m.owner == owner {
			return ErrCalledInTx
		}
	}
	return nil
}
