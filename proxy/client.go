package proxy

import "net/http"

// clientName is the name of the client key a request was made with, for
// attribution in events, status and history; "" when none.
func clientName(r *http.Request) string {
	return clientOf(r).Name
}
