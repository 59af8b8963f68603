package admin

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// heldConn lets the event writer send a batch of websocket frames in one
// system call: between hold and release, writes gather in a buffer.
// Outside a batch it writes straight through, so the handshake and the
// control frames gorilla writes by itself (pongs, the echo of a close)
// leave at once.
type heldConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  *bufio.Writer
	// gorilla sets a write deadline before every frame. While held, the
	// latest waits here until bytes go to the socket, which is when it
	// has something to bound: setting one on the socket moves a runtime
	// timer, and a batch would do that once per event for a single write.
	deadline        time.Time
	deadlinePending bool
}

// heldBuffer is larger than a typical batch (a few dozen events of a few
// hundred bytes); a bigger one spills to the socket as it fills.
const heldBuffer = 16 << 10

func (c *heldConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		return c.buf.Write(p)
	}
	return c.Conn.Write(p)
}

func (c *heldConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		c.deadline, c.deadlinePending = t, true
		return nil
	}
	c.deadlinePending = false
	return c.Conn.SetWriteDeadline(t)
}

func (c *heldConn) applyDeadlineLocked() error {
	if !c.deadlinePending {
		return nil
	}
	c.deadlinePending = false
	return c.Conn.SetWriteDeadline(c.deadline)
}

func (c *heldConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		c.buf = bufio.NewWriterSize(socketWriter{c}, heldBuffer)
	}
	c.held = true
}

// release sends what was held and writes through again.
func (c *heldConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	err := c.flushLocked()
	// A batch that sent nothing leaves its deadline pending; writing
	// through, the socket must have it.
	if derr := c.applyDeadlineLocked(); err == nil {
		err = derr
	}
	return err
}

// flush sends what is held now, for a frame that must leave before the
// connection closes.
func (c *heldConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *heldConn) flushLocked() error {
	if c.buf == nil {
		return nil
	}
	return c.buf.Flush()
}

// socketWriter is what the held buffer writes to, spilling or flushing,
// with c.mu held: the socket, under the deadline last set.
type socketWriter struct{ c *heldConn }

func (w socketWriter) Write(p []byte) (int, error) {
	if err := w.c.applyDeadlineLocked(); err != nil {
		return 0, err
	}
	return w.c.Conn.Write(p)
}

// hijackHeld hands the websocket upgrader a heldConn in place of the
// hijacked connection.
type hijackHeld struct {
	http.ResponseWriter
	conn *heldConn
}

func (w hijackHeld) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn.Conn = nc
	return w.conn, brw, nil
}
