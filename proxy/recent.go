package proxy

import "sync"

// recent is a bounded set of strings in two generations: once the
// current one holds max, it becomes the previous one and a new one
// starts. An entry added again while current stays for another
// generation; one not added again is forgotten after two.
type recent struct {
	mu        sync.Mutex
	max       int
	cur, prev map[string]struct{}
}

// add puts v in the current generation; it reports false when v was
// there already.
func (r *recent) add(v string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cur[v]; ok {
		return false
	}
	if r.cur == nil || len(r.cur) >= r.max {
		r.prev, r.cur = r.cur, make(map[string]struct{})
	}
	r.cur[v] = struct{}{}
	return true
}

// all is every entry of both generations.
func (r *recent) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]byte, 0, len(r.cur)+len(r.prev))
	for _, m := range []map[string]struct{}{r.cur, r.prev} {
		for v := range m {
			out = append(out, []byte(v))
		}
	}
	return out
}
