package pool

import (
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/policy"
)

// Apply tells the pool what act, the policy's action on credential id's
// answer v to a request for model from tool, says the pool must know,
// before the action is carried out: a cooldown, a park, the tool kept
// off a login, the reason shown on a failing credential, and the answer
// counted. A Pass is counted once its answer has been delivered (Record),
// and a CoolLater is the caller's to record when its request is over.
// The engine's attempt loop and bench/goodput's simulator both keep
// their books with it. It returns the answer's reason (policy.Reason).
func (p *Pool) Apply(id, model, tool string, act policy.Action, v classify.Verdict) string {
	reason := policy.Reason(v)
	if act.Cool != nil {
		p.CoolDown(id, model, Scope(act.Cool.Scope), act.Cool.RetryAfter, reason)
	}
	if act.Park != nil {
		p.Park(id, act.Park.Model, act.Park.Kind, act.Park.Reason)
	}
	if act.BarTool {
		p.BarTool(id, tool, reason)
	}
	if v.Class == classify.Transient && act.Kind != policy.Pass {
		// The credential's own upstream is failing: worth showing. Client
		// errors, overloads and a client that left are not the
		// credential's doing and leave its reason alone.
		p.SetReason(id, reason)
	}
	if act.Kind == policy.Pass {
		return reason
	}
	switch act.Count {
	case policy.CountSuccess:
		p.Record(id, true, false)
	case policy.CountFailure:
		p.Record(id, false, false)
	case policy.CountRateLimit:
		p.Record(id, false, true)
	}
	return reason
}
