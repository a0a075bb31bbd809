package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Client talks to a server over its socket. Many requests may be in flight at once; it is safe
// for concurrent use.
type Client struct {
	nc  net.Conn
	wmu sync.Mutex // serializes writes

	mu      sync.Mutex
	pending map[string]chan Frame
	next    uint64
	err     error // set once the connection is gone
	done    chan struct{}
}

// Dial connects to the server listening on the Unix socket at path.
func Dial(ctx context.Context, path string) (*Client, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("server: dial: %w", err)
	}
	c := &Client{nc: nc, pending: map[string]chan Frame{}, done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// pieceQueue is how many pieces of one suggestion may wait for the caller; more than the server
// ever sends, so the reader never blocks on a slow caller.
const pieceQueue = 512

func (c *Client) readLoop() {
	s := bufio.NewScanner(c.nc)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	for s.Scan() {
		var f Frame
		if err := json.Unmarshal(s.Bytes(), &f); err != nil {
			c.fail(fmt.Errorf("server: bad frame: %w", err))
			return
		}
		if f.Done && len(f.ID) == 0 && f.Error != "" {
			// Not about one request: the server refused the connection (too many) or a line.
			c.fail(fmt.Errorf("server: %s", f.Error))
			return
		}
		c.mu.Lock()
		ch := c.pending[string(f.ID)]
		if f.Done {
			delete(c.pending, string(f.ID))
		}
		c.mu.Unlock()
		if ch == nil {
			continue // a request the caller gave up on
		}
		if f.Done {
			ch <- f // room is kept for it: pieces beyond pieceQueue-1 are dropped below
			continue
		}
		if len(ch) < pieceQueue-1 {
			ch <- f
		}
	}
	err := s.Err()
	if err == nil {
		err = errors.New("server: connection closed")
	}
	c.fail(err)
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
		c.nc.Close()
	}
}

// Complete sends r (its ID is assigned when empty) and returns the final frame, calling onText
// (when not nil) with each streamed piece. Canceling ctx cancels the request on the server.
// A final frame carrying an error is returned together with that error.
func (c *Client) Complete(ctx context.Context, r Request, onText func(string)) (Frame, error) {
	ch := make(chan Frame, pieceQueue)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return Frame{}, c.err
	}
	if len(r.ID) == 0 {
		c.next++
		r.ID = json.RawMessage(strconv.Quote("c" + strconv.FormatUint(c.next, 10)))
	}
	key := string(r.ID)
	if _, dup := c.pending[key]; dup {
		c.mu.Unlock()
		return Frame{}, fmt.Errorf("server: request id %s is in flight", key)
	}
	c.pending[key] = ch
	c.mu.Unlock()

	if err := c.write(r); err != nil {
		c.forget(key)
		// A server that refuses the connection says why and hangs up, maybe before the
		// request is written: its reason, which the reader is getting, says more.
		select {
		case <-c.done:
			return Frame{}, c.err
		case <-time.After(time.Second):
		}
		return Frame{}, err
	}
	for {
		select {
		case f := <-ch:
			if !f.Done {
				if onText != nil {
					onText(f.Text)
				}
				continue
			}
			if f.Error != "" {
				return f, fmt.Errorf("server: %s", f.Error)
			}
			return f, nil
		case <-ctx.Done():
			c.forget(key)
			c.write(Request{Cancel: r.ID})
			return Frame{}, ctx.Err()
		case <-c.done:
			c.forget(key)
			return Frame{}, c.err
		}
	}
}

func (c *Client) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
}

func (c *Client) write(r Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("server: encoding request: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.nc.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("server: send: %w", err)
	}
	return nil
}

// Close disconnects; requests in flight return an error.
func (c *Client) Close() error {
	c.fail(errors.New("server: client closed"))
	return nil
}
