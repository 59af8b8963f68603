package proxy

import (
	"context"
	"sync"
)

// chanGroup is a WaitGroup whose Wait can give up: a test waits for the
// handler to finish a request (its request_finished out) up to a
// deadline, not forever. The proxy has no use for one: the daemon's
// graceful stop is http.Server.Shutdown's.
type chanGroup struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (g *chanGroup) Add() {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
}

func (g *chanGroup) Done() {
	g.mu.Lock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

func (g *chanGroup) Wait(ctx context.Context) error {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	ch := g.idle
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
