package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Resuming long-running operations after a crash.
//
// Put, Patch and Delete tell the caller where ARM said to poll through the
// client's CallOptions.OperationStarted:
//
//	cli := client.With(azure.CallOptions{OperationStarted: func(pollURL string) { record(pollURL) }})
//	body, err := cli.Put(ctx, id, apiVersion, body) // record runs before the wait starts
//
// A later process passes the recorded URL to Resume, which polls it to the
// end as ASO does with its poller-resume-token annotation.

// resolvePollHeaders makes relative polling headers absolute (ARM sends
// absolute URLs; a relative one is resolved against the request rather than
// failing).
func resolvePollHeaders(resp *http.Response) {
	for _, h := range []string{"Azure-AsyncOperation", "Location", "Operation-Location"} {
		if v := resp.Header.Get(h); v != "" {
			if ref, err := url.Parse(v); err == nil && !ref.IsAbs() {
				resp.Header.Set(h, resp.Request.URL.ResolveReference(ref).String())
			}
		}
	}
}

// pollURL is where the operation started by resp is polled, as azcore's
// poller chooses: Azure-AsyncOperation, then Location, then the resource.
func pollURL(resp *http.Response) string {
	resolvePollHeaders(resp)
	for _, h := range []string{"Azure-AsyncOperation", "Location"} {
		if v := resp.Header.Get(h); v != "" {
			return v
		}
	}
	return resp.Request.URL.String()
}

// ErrOperationNotFound is returned (wrapped) by Resume when ARM no longer
// knows the operation and the resource does not show its outcome either.
var ErrOperationNotFound = errors.New("long-running operation not found")

// Resume polls the long-running operation at pollURL, started earlier (maybe
// by another process) by method ("PUT", "PATCH" or "DELETE") on resource id,
// until it ends. Each answer is read with the semantics it has: a body with a
// "status" is an Azure-AsyncOperation status (Succeeded, Failed, Canceled, or
// still running); 202 is a Location operation still running and any other
// 2xx a finished one; a resource body is finished when its
// provisioningState is terminal. Between polls it waits ARM's Retry-After
// (else the poll interval); the first poll is immediate, as the operation may
// have ended while nobody watched.
//
// For a write it returns the resource as ARM now has it (a GET); for DELETE it
// returns nil, and a 404 of the resource is success. When the operation URL
// has expired (404) the resource itself is read: a write whose resource is in
// a terminal state is finished (a Failed or Canceled state is an error), one
// still provisioning is polled through the resource; a resource still present
// after a DELETE whose operation is gone is ErrOperationNotFound.
//
// pollURL must be on the client's ARM endpoint: the request carries the
// credential's token.
func (c *Client) Resume(ctx context.Context, method, id, apiVersion, pollURL string) ([]byte, error) {
	method = strings.ToUpper(method)
	resURL, err := c.requestURL(id, apiVersion)
	if err != nil {
		return nil, err
	}
	if pollURL == "" {
		pollURL = resURL
	}
	pu, err := url.Parse(pollURL)
	if err != nil || !pu.IsAbs() {
		return nil, fmt.Errorf("resume %s %s: poll URL %q is not an absolute URL", method, id, pollURL)
	}
	if !strings.EqualFold(pu.Scheme, c.endpoint.Scheme) || !strings.EqualFold(pu.Host, c.endpoint.Host) {
		return nil, fmt.Errorf("resume %s %s: poll URL host %s is not the ARM endpoint %s", method, id, pu.Host, c.endpoint.Host)
	}
	del := method == http.MethodDelete
	start, polls := time.Now(), 0
	for {
		polls++
		resp, body, err := c.send(ctx, http.MethodGet, pollURL, nil)
		if err != nil {
			return nil, err
		}
		done, err := c.pollAnswer(method, id, resp, body)
		if errors.Is(err, ErrNotFound) {
			if pollURL == resURL {
				if del {
					return nil, nil
				}
				return nil, err
			}
			// The operation expired: the resource tells the rest.
			switch gbody, gerr := c.Get(ctx, id, apiVersion); {
			case gerr != nil && del && errors.Is(gerr, ErrNotFound):
				return nil, nil
			case gerr != nil:
				return nil, gerr
			case del:
				return nil, fmt.Errorf("resume DELETE %s: %w (the resource still exists)", id, ErrOperationNotFound)
			default:
				pollURL, done, err = resURL, false, nil
				if st := provisioningState(gbody); st == "" || isTerminal(st) {
					done = true
					if isFailed(st) {
						err = c.failedState(method, resp, gbody, st)
					}
				}
			}
		}
		if err != nil {
			return nil, err
		}
		if done {
			c.log.Debug("resumed operation finished", "method", method, "path", id, "polls", polls, "elapsed", time.Since(start))
			if del {
				return nil, nil
			}
			return c.Get(ctx, id, apiVersion)
		}
		d := retryAfter(resp)
		if d <= 0 {
			d = c.poll
		}
		if err := c.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("resume %s %s: waiting for the operation: %w", method, id, err)
		}
	}
}

// pollAnswer reads one answer of a poll: done, or an error (an *ARMError;
// ErrNotFound for a 404).
func (c *Client) pollAnswer(method, id string, resp *http.Response, body []byte) (bool, error) {
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return false, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		e := newARMError(resp, body)
		e.Method, e.Path = method, id
		return false, e
	}
	// An Azure-AsyncOperation status has a top-level status and no
	// provisioningState; anything else is the resource (Location results and
	// the "poll the resource" pattern).
	var op struct {
		Status any `json:"status"`
	}
	_ = json.Unmarshal(body, &op)
	status, _ := op.Status.(string)
	st := provisioningState(body)
	if status != "" && st == "" {
		st = status
	}
	switch {
	case isFailed(st):
		err := c.failedState(method, resp, body, st)
		var ae *ARMError
		if errors.As(err, &ae) {
			ae.Path = id
		}
		return false, err
	case st == "" || isTerminal(st):
		return true, nil
	}
	return false, nil
}
