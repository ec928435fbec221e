package rest

import (
	"net/http"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/model"
)

// Placement routes (seed 002): manual elastic toggles, the density series,
// and heartbeats that carry cache hints.

// elasticToggle switches a worker off or on by hand: POST
// /v1/workers/{name}/elastic {"enabled": bool}. Inside the elastic
// coordinator's toggle cooldown it answers 409.
func (s *Server) elasticToggle(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ChangeWorkers) {
		return
	}
	var req api.ElasticToggle
	if !s.decodeJSON(w, r, &req) {
		return
	}
	if req.Enabled == nil {
		s.fail(w, model.FieldErrors{{Path: "enabled", Msg: "required: true enables the worker, false disables it"}})
		return
	}
	wk, err := s.ctrl.ToggleElastic(r.Context(), r.PathValue("name"), *req.Enabled)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.logger(r).Info("worker toggled", "worker", wk.Name, "state", wk.State, "by", principal(r).TokenID)
	writeJSON(w, 200, wk)
}

// density serves the task/worker density series: GET /v1/density.
func (s *Server) density(w http.ResponseWriter, r *http.Request) {
	if s.allow(w, r, auth.ReadDensity) {
		writeJSON(w, 200, s.ctrl.Density()) // no loop round
	}
}

// heartbeatBody reads the optional body of a heartbeat; ok is false when
// an error was answered.
func (s *Server) heartbeatBody(w http.ResponseWriter, r *http.Request) (hb api.Heartbeat, ok bool) {
	if r.ContentLength == 0 {
		return hb, true
	}
	return hb, s.decodeJSON(w, r, &hb)
}
