package httpapi

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// The connections' deadlines. jobd serve sets http.Server's ReadTimeout,
// which bounds the reading of a request (its headers and its body), and
// its WriteTimeout, which bounds the rest: the handler and its answer,
// counted from the end of the request's headers. A client that sends its
// body a byte at a time is cut at the first, one that stops reading an
// answer at the second, and neither holds memory or a connection longer.
// The handlers that answer late on purpose move their own write
// deadline (HoldOpen): a long-poll to its wait and answerMargin, an
// event stream before each event.

// answerMargin is what a long-poll's deadline gives the answer beyond
// its wait: the last read and the write.
const answerMargin = 30 * time.Second

// HoldOpen moves the write deadline of w's connection to d from now, for
// a handler that answers later than the server's write timeout on
// purpose (a long-poll, a stream, a proxied call). It does nothing where
// w does not reach a connection (a test's recorder). Deadlines are the
// connection's, in real time, whatever clock paces the handler.
func HoldOpen(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// ReleaseReadDeadline wraps h, the whole handler of a server with a
// ReadTimeout, so that the read timeout bounds the reading of each
// request and no more: once the body has been read to its end (at once
// for a request without one), the connection's read deadline is lifted
// until the answer is written (the server sets the next request's). A
// read deadline that passed while a handler runs would cancel the
// request's context (net/http's background read of the connection
// fails), ending every long-poll and stream at the read timeout.
func ReleaseReadDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		release := func() { _ = rc.SetReadDeadline(time.Time{}) }
		if r.Body == nil || r.Body == http.NoBody {
			release()
		} else {
			r.Body = &eofHook{ReadCloser: r.Body, onEOF: release}
		}
		h.ServeHTTP(w, r)
	})
}

// eofHook calls onEOF once, when its body has been read to its end.
type eofHook struct {
	io.ReadCloser
	onEOF func()
	once  sync.Once
}

func (b *eofHook) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.onEOF)
	}
	return n, err
}
