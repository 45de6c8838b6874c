package httpapi

import (
	"net/http"
	"time"
)

// The connections' deadlines. jobd serve sets http.Server's ReadTimeout,
// which bounds the reading of a request (its headers and its body: once
// the body is read, net/http lifts the read deadline while the handler
// runs), and its WriteTimeout, which bounds the rest: the handler and its
// answer, counted from the end of the request's headers. A client that
// sends its body a byte at a time is cut at the first, one that stops
// reading an answer at the second, and neither holds memory or a
// connection longer. The handlers that answer late on purpose move their
// own write deadline (holdOpen): a long-poll to its wait and
// answerMargin, an event stream before each event.

// answerMargin is what a long-poll's deadline gives the answer beyond
// its wait: the last read and the write.
const answerMargin = 30 * time.Second

// holdOpen moves the write deadline of w's connection to d from now, for
// a handler that answers later than the server's write timeout on
// purpose (a long-poll, a stream, a proxied call). It does nothing where
// w does not reach a connection (a test's recorder). Deadlines are the
// connection's, in real time, whatever clock paces the handler.
func holdOpen(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}
