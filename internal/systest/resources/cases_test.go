package resources

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// dial opens a connection to the node, closed when t ends.
func dial(t *testing.T, n *node) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// slowReaderCase: slowReaders clients ask for a page of pageJobs jobs
// of argsBytes args each and stop reading once it starts. The node holds
// a bounded part of each page (not the page), and the write timeout cuts
// them.
func slowReaderCase(t *testing.T, n *node) figure {
	n.resetPeak(t)
	f := figure{base: n.sample(t)}
	const route = "GET /api/v1/jobs"
	answeredBefore := n.answered(t, route)
	conns := make([]*net.TCPConn, slowReaders)
	for i := range conns {
		c := dial(t, n)
		_ = c.SetReadBuffer(4 << 10) // the kernel holds little for the reader
		if _, err := io.WriteString(c, n.request("GET", fmt.Sprintf("/api/v1/jobs?limit=%d", pageJobs), n.secret)); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	// Each answer has begun: its page is being read and written.
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(settle(t)))
		line, err := bufio.NewReaderSize(c, 4<<10).ReadString('\n')
		if err != nil || !strings.Contains(line, " 200 ") {
			t.Fatalf("the page's answer: %q, %v", line, err)
		}
	}
	f.held = n.sample(t)
	t.Logf("the answers have begun: %s, peak %.1f MiB", f.held, mib(n.peakKiB(t)))
	// The clients read no more: the write timeout ends their answers
	// (their handlers return), and the node lets go of them.
	waitFor(t, "the stalled readers' answers end", settle(t), func() bool { return n.answered(t, route) >= answeredBefore+slowReaders })
	waitFor(t, "the node lets go of the stalled readers", settle(t), func() bool { return released(f.base, n.sample(t)) })
	f.after, f.peakKiB = n.sample(t), n.peakKiB(t)
	f.check(t, slowReaders, goroutinesPerConn, int64(slowReaders)*pageJobsInFlight*argsBytes+slowReaders*connBytes)
	return f
}

// idleCase: idleConns connections, half of which send nothing and half
// a request and then nothing more. The node holds each at the cost of a
// connection, and closes each: a silent one at its read header timeout
// (the read timeout), a kept-alive one at its idle timeout.
func idleCase(t *testing.T, n *node) figure {
	n.resetPeak(t)
	f := figure{base: n.sample(t)}
	conns := make([]*net.TCPConn, idleConns)
	for i := range conns {
		c := dial(t, n)
		if i%2 == 1 {
			if _, err := io.WriteString(c, n.request("GET", "/health", "")); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || br.Buffered() != 0 {
				t.Fatalf("GET /health: %d", resp.StatusCode)
			}
		}
		conns[i] = c
	}
	f.held = n.sample(t)
	// Each connection ends at the node: the client reads its close.
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(settle(t)))
			if k, err := c.Read(make([]byte, 1)); k != 0 || !errors.Is(err, io.EOF) {
				errs <- fmt.Errorf("an idle connection was not closed by the node: read %d bytes, %v", k, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, "the node lets go of the idle connections", settle(t), func() bool { return released(f.base, n.sample(t)) })
	f.after, f.peakKiB = n.sample(t), n.peakKiB(t)
	f.check(t, idleConns, 1, idleConns*connBytes)
	return f
}

// slowBodyCase: slowBodies requests whose body of 1 KiB comes a byte a
// second. The read timeout cuts each long before its end.
func slowBodyCase(t *testing.T, n *node) figure {
	n.resetPeak(t)
	f := figure{base: n.sample(t)}
	const bodyBytes = 1 << 10
	stop := make(chan struct{})
	var writers sync.WaitGroup
	defer func() { close(stop); writers.Wait() }()
	type outcome struct {
		status int
		err    error
	}
	outcomes := make(chan outcome, slowBodies)
	for range slowBodies {
		c := dial(t, n)
		head := n.request("POST", "/api/v1/jobs", n.secret, "Content-Type: application/json", fmt.Sprintf("Content-Length: %d", bodyBytes))
		if _, err := io.WriteString(c, head+"{"); err != nil {
			t.Fatal(err)
		}
		writers.Add(1)
		go func() { // a byte a second: the case's load, not a wait
			defer writers.Done()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for sent := 1; sent < bodyBytes-1; sent++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(settle(t)))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				outcomes <- outcome{err: err}
				return
			}
			resp.Body.Close()
			outcomes <- outcome{status: resp.StatusCode}
		}()
	}
	f.held = n.sample(t)
	for range slowBodies {
		o := <-outcomes
		// Cut: answered 400 (the body's read timed out) or closed, long
		// before the body's end (bodyBytes seconds).
		var ne net.Error
		if o.status != http.StatusBadRequest && (o.err == nil || errors.As(o.err, &ne) && ne.Timeout()) {
			t.Fatalf("a slow body was not cut by the node: status %d, %v", o.status, o.err)
		}
	}
	waitFor(t, "the node lets go of the slow bodies", settle(t), func() bool { return released(f.base, n.sample(t)) })
	f.after, f.peakKiB = n.sample(t), n.peakKiB(t)
	f.check(t, slowBodies, goroutinesPerConn, slowBodies*connBytes)
	return f
}

// streamCase: streamKeys keys (scope read) each try streamTries event
// streams of a queued job, one after the other: the first key gets
// maxStreamsPerKey, the second too (the node then holds maxStreams),
// the third none; every refusal is 429 too-many-requests with
// Retry-After. Once the clients leave, the node lets go of the streams.
func streamCase(t *testing.T, n *node, jobID string) figure {
	n.resetPeak(t)
	f := figure{base: n.sample(t)}
	admin, err := client.New(n.base, n.secret)
	if err != nil {
		t.Fatal(err)
	}
	var open []*net.TCPConn
	for k := range streamKeys {
		key, err := admin.CreateKey(t.Context(), fmt.Sprintf("streams-%d", k), []string{api.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		granted := 0
		for range streamTries {
			c := dial(t, n)
			if _, err := io.WriteString(c, n.request("GET", "/api/v1/jobs/"+jobID+"/stream", key.Key)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusOK {
				granted++
				open = append(open, c)
				continue
			}
			var p api.Problem
			_ = json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			c.Close()
			if resp.StatusCode != http.StatusTooManyRequests || p.Type != api.ProblemTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Errorf("key %d, stream %d: %d %s (Retry-After %q)", k, granted+1, resp.StatusCode, p.Type, resp.Header.Get("Retry-After"))
			}
		}
		want := min(maxStreamsPerKey, maxStreams-min(maxStreams, k*maxStreamsPerKey))
		if granted != want {
			t.Errorf("key %d got %d streams, want %d", k, granted, want)
		}
	}
	f.held = n.sample(t)
	if f.held.streams > maxStreams {
		t.Errorf("the node holds %d streams, over --max-streams %d", f.held.streams, maxStreams)
	}
	for _, c := range open {
		c.Close()
	}
	waitFor(t, "the node lets go of the streams", settle(t), func() bool {
		s := n.sample(t)
		return s.streams == 0 && released(f.base, s)
	})
	f.after, f.peakKiB = n.sample(t), n.peakKiB(t)
	f.check(t, streamKeys*streamTries, goroutinesPerConn, streamKeys*streamTries*connBytes)
	return f
}
