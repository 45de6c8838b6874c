// Package client is the Go SDK of jobd's HTTP API v1: submit jobs, read
// them, wait for them with live progress, cancel, retry and list them,
// and manage queues and API keys. It depends only on the wire types of
// package api and the standard library, so a program that talks to a
// jobd server does not pull in the server.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/jobd/jobd/api"
)

// Client talks to one jobd server. It is safe for concurrent use.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc (default
// http.DefaultClient). Do not give hc a Timeout shorter than your longest
// Wait: streams and long-polls are held open.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080"), presenting key (an API key or the admin
// secret; empty for an open server) as a bearer credential.
func New(baseURL, key string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("jobd client: server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("jobd client: server URL %q: want http://host:port or https://host:port", baseURL)
	}
	c := &Client{base: u, key: key, http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Sentinel errors an *Error matches with errors.Is, by HTTP status.
var (
	// ErrInvalid: the request was refused as malformed or breaking a rule
	// (400, 413, 422); Error.Problem.Field names the field.
	ErrInvalid = errors.New("invalid request")
	// ErrUnauthorized: missing or wrong credentials (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the key lacks the scope (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no such job, key or route (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the job's state does not allow the operation (409).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the server or its database is unavailable (502, 503,
	// 504).
	ErrUnavailable = errors.New("unavailable")
)

// Error is an error answer of the server, with its problem document.
type Error struct {
	StatusCode int
	Problem    api.Problem
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("jobd: %d %s", e.StatusCode, e.Problem.Error())
	if e.Problem.Field != "" && !strings.Contains(e.Problem.Detail, e.Problem.Field) {
		msg += " (field " + e.Problem.Field + ")"
	}
	return msg
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool {
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return target == ErrInvalid
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusForbidden:
		return target == ErrForbidden
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return target == ErrUnavailable
	}
	return false
}

// request builds a request of path (under the base URL) with query and a
// JSON body (nil for none).
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Request, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("jobd client: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("jobd client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "jobd-client")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req, nil
}

// do sends a request and decodes a 2xx JSON answer into out (nil to
// discard it). It returns the answer's status and header.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (int, http.Header, error) {
	req, err := c.request(ctx, method, path, query, body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("jobd client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, resp.Header, readError(resp)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, resp.Header, fmt.Errorf("jobd client: %s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, resp.Header, nil
}

// readError turns an error answer into an *Error, with a problem made up
// from the status when the body is not a problem document.
func readError(resp *http.Response) error {
	e := &Error{StatusCode: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e.Problem) != nil || e.Problem.Status == 0 {
		e.Problem = api.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(b))}
	}
	return e
}
