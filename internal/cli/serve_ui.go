package cli

import (
	"log/slog"
	"net/http"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/gateway"
	"github.com/jobd/jobd/httpapi"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/web"
)

// withDashboard serves the dashboard at /ui/ (and redirects / there)
// beside api, the API's handler (with the gateway's routes, if any),
// which serves every other path. The dashboard reads what the API reads
// (apiCfg's store, processes, schedules and secret), the node's queue
// health snapshot and its maintenance leadership.
func withDashboard(apiCfg httpapi.Config, api http.Handler, health *telemetry.Health, eng *engine.Engine,
	gw *gateway.Gateway, logger *slog.Logger) (http.Handler, error) {
	stream, err := httpapi.NewJobStream(apiCfg)
	if err != nil {
		return nil, err
	}
	ui, err := web.New(web.Config{
		Store: apiCfg.Store, AdminSecret: apiCfg.AdminSecret, JobStream: stream,
		Health: health.Snapshot, Leading: eng.Leading, Processes: apiCfg.Processes, Async: gw,
		Schedules: apiCfg.Schedules,
		Logger:    logger,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	web.Mount(mux, ui)
	mux.Handle("/", api)
	return mux, nil
}
