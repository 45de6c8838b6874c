package cli

import (
	"errors"
	"flag"
	"net"
	"net/http"
	"time"

	"github.com/jobd/jobd/httpapi"
)

// Defaults of the HTTP servers' timeouts (jobd serve --read-timeout,
// --write-timeout, --idle-timeout).
const (
	// DefaultReadTimeout bounds the reading of a request, headers and
	// body: a body of the default 1 MiB limit must come at 35 KiB/s.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a request's handling and its answer,
	// from the end of its headers: the longest a client that stops
	// reading holds its answer in memory. Long-polls and streams move
	// their own deadline.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that sends no
	// next request (Go's client keeps its idle ones 90s).
	DefaultIdleTimeout = 2 * time.Minute
	// maxReadHeaderTimeout bounds the reading of a request's headers, as
	// before the read timeout existed; a shorter read timeout bounds it.
	maxReadHeaderTimeout = 10 * time.Second
)

// httpFlags are the HTTP servers' limits: timeouts (the API's server and
// the metrics one) and the event streams' bounds.
type httpFlags struct {
	readTimeout, writeTimeout, idleTimeout time.Duration
	maxStreams, maxStreamsPerKey           int
	streamMaxAge                           time.Duration
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.readTimeout, "read-timeout", DefaultReadTimeout, "how long a client may take to send a request, headers and body (a slower one is cut)")
	fs.DurationVar(&f.writeTimeout, "write-timeout", DefaultWriteTimeout, "how long a request may take from the end of its headers to the end of its answer (a client that stops reading is cut); long-polls and event streams extend their own")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", DefaultIdleTimeout, "a kept-alive connection without a next request is closed after this")
	fs.IntVar(&f.maxStreams, "max-streams", httpapi.DefaultMaxStreams, "job event streams this node holds open at once; 429 past it")
	fs.IntVar(&f.maxStreamsPerKey, "max-streams-per-key", httpapi.DefaultMaxStreamsPerCaller, "job event streams one API key (or the admin secret; without credentials, one client address) holds open on this node; 429 past it")
	fs.DurationVar(&f.streamMaxAge, "stream-max-age", httpapi.DefaultStreamMaxAge, "a job event stream ends after this, telling its client to reconnect (retry:, Last-Event-ID)")
}

// check refuses limits that are not positive.
func (f *httpFlags) check() error {
	switch {
	case f.readTimeout <= 0:
		return errors.New("--read-timeout must be positive")
	case f.writeTimeout <= 0:
		return errors.New("--write-timeout must be positive")
	case f.idleTimeout <= 0:
		return errors.New("--idle-timeout must be positive")
	case f.maxStreams <= 0:
		return errors.New("--max-streams must be positive")
	case f.maxStreamsPerKey <= 0:
		return errors.New("--max-streams-per-key must be positive")
	case f.streamMaxAge <= 0:
		return errors.New("--stream-max-age must be positive")
	}
	return nil
}

// streams returns the node's event stream counter, shared by the API and
// the dashboard.
func (f *httpFlags) streams() (*httpapi.Streams, error) {
	return httpapi.NewStreams(httpapi.StreamLimits{
		MaxOpen: f.maxStreams, MaxPerCaller: f.maxStreamsPerKey, MaxAge: f.streamMaxAge,
	})
}

// server returns an HTTP server of handler with the timeouts: the read
// timeout bounds the reading of a request, headers and body (net/http
// lifts it once the body is read); the write timeout the rest, but for
// the handlers that move their own (httpapi's long-polls and streams).
func (f *httpFlags) server(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(maxReadHeaderTimeout, f.readTimeout),
		ReadTimeout:       f.readTimeout,
		WriteTimeout:      f.writeTimeout,
		IdleTimeout:       f.idleTimeout,
	}
}

// guardHost wraps handler, served on addr, so that a server listening on
// a loopback address answers only loopback host names (DNS rebinding:
// httpapi.LoopbackHostsOnly).
func guardHost(addr string, handler http.Handler) http.Handler {
	if loopbackListen(addr) {
		return httpapi.LoopbackHostsOnly(handler)
	}
	return handler
}

// loopbackListen reports whether a listen address (host:port) is a
// loopback one only: localhost, 127.0.0.0/8 or ::1. An empty host (every
// address) is not.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return httpapi.LoopbackHost(host)
}
