package rest

import (
	"net/http"
	"slices"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/spec"
)

// The endpoint, throttling and dead-letter routes (seed 000;
// docs/endpoints.md). Admins and submitters read endpoints and settings;
// only an admin changes them, as with queue policies.

func (s *Server) endpoints(w http.ResponseWriter, r *http.Request) {
	if s.allow(w, r, auth.ReadEndpoints) {
		writeJSON(w, 200, s.ctrl.Endpoints()) // no loop round
	}
}

func (s *Server) setEndpoint(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ChangeEndpoints) {
		return
	}
	var e spec.Endpoint
	if !s.decodeDocumentJSON(w, r, &e) {
		return
	}
	out, err := s.ctrl.SetEndpoint(r.Context(), r.PathValue("name"), e)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.logger(r).Info("endpoint set", "endpoint", out.Name, "by", principal(r).TokenID)
	writeJSON(w, 200, out)
}

func (s *Server) removeEndpoint(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ChangeEndpoints) {
		return
	}
	if err := s.ctrl.RemoveEndpoint(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	s.logger(r).Info("endpoint removed", "endpoint", r.PathValue("name"), "by", principal(r).TokenID)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) throttling(w http.ResponseWriter, r *http.Request) {
	if s.allow(w, r, auth.ReadEndpoints) {
		writeJSON(w, 200, s.ctrl.Throttling()) // no loop round
	}
}

func (s *Server) setThrottling(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ChangeEndpoints) {
		return
	}
	var th spec.Throttling
	if !s.decodeDocumentJSON(w, r, &th) {
		return
	}
	out, err := s.ctrl.SetThrottling(r.Context(), th)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.logger(r).Info("throttling set", "enabled", *out.ThrottlingEnabled, "capacityTargetPercentage", *out.CapacityTargetPercentage, "by", principal(r).TokenID)
	writeJSON(w, 200, out)
}

// deadLetters lists the dead letters the caller may see: a submitter sees
// those of its queues and shares.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadJobs) {
		return
	}
	list, err := s.ctrl.DeadLetters(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	p := principal(r)
	list.DeadLetters = slices.DeleteFunc(list.DeadLetters, func(d api.DeadLetter) bool { return !p.Sees(d.Queue, d.Share) })
	writeJSON(w, 200, list)
}

// redrive re-checks a dead-lettered job's inputs and submits it again;
// whoever may cancel the job may redrive it.
func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, id) {
		return
	}
	out, err := s.ctrl.Redrive(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.logger(r).Info("dead letter redriven", "job", id, "submitted", out.Redriven, "by", principal(r).TokenID)
	writeJSON(w, 200, out)
}
