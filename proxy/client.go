package proxy

import (
	"context"
	"net/http"
)

type clientCtxKey struct{}

// WithClient marks a request with the name of the client key that made
// it, for attribution in events, status and history.
func WithClient(r *http.Request, name string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientCtxKey{}, name))
}

// clientName is the client key's name a request was marked with, "" when
// none.
func clientName(r *http.Request) string {
	s, _ := r.Context().Value(clientCtxKey{}).(string)
	return s
}
