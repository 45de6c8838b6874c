package cli

import (
	"flag"
	"time"

	"github.com/jobd/jobd"
)

// httpFlags are the HTTP servers' limits: timeouts (the API's server and
// the metrics one) and the event streams' bounds.
type httpFlags struct {
	readTimeout, writeTimeout, idleTimeout time.Duration
	maxStreams, maxStreamsPerKey           int
	streamMaxAge                           time.Duration
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.readTimeout, "read-timeout", jobd.DefaultReadTimeout, "how long a client may take to send a request, headers and body (a slower one is cut)")
	fs.DurationVar(&f.writeTimeout, "write-timeout", jobd.DefaultWriteTimeout, "how long a request may take from the end of its headers to the end of its answer (a client that stops reading is cut); long-polls and event streams extend their own")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", jobd.DefaultIdleTimeout, "a kept-alive connection without a next request is closed after this")
	fs.IntVar(&f.maxStreams, "max-streams", jobd.DefaultMaxStreams, "job event streams this node holds open at once; 429 past it")
	fs.IntVar(&f.maxStreamsPerKey, "max-streams-per-key", jobd.DefaultMaxStreamsPerCaller, "job event streams one API key (or the admin secret; without credentials, one client address) holds open on this node; 429 past it")
	fs.DurationVar(&f.streamMaxAge, "stream-max-age", jobd.DefaultStreamMaxAge, "a job event stream ends after this, telling its client to reconnect (retry:, Last-Event-ID)")
}
