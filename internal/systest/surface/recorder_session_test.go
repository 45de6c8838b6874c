package surface_test

import (
	"context"
	"time"

	"github.com/jobd/jobd/store"
)

// The dashboard's sessions (store.SessionStore), noted like every call.

func (r recorder) SessionCreate(ctx context.Context, s store.Session, ttl time.Duration) (*store.Session, error) {
	note(ctx, "SessionCreate")
	return r.st.SessionCreate(ctx, s, ttl)
}

func (r recorder) SessionGet(ctx context.Context, id []byte) (*store.Session, error) {
	note(ctx, "SessionGet")
	return r.st.SessionGet(ctx, id)
}

func (r recorder) SessionDelete(ctx context.Context, id []byte) error {
	note(ctx, "SessionDelete")
	return r.st.SessionDelete(ctx, id)
}
