package sim

import (
	"math"
	"time"
)

// Windows is a credential's subscription usage as the sim reports it,
// moving with use the way a real plan's does: each answer the credential
// is given adds Per to the windows it reports, and a window that reaches
// its reset starts over at nothing.
type Windows struct {
	// FiveHour and SevenDay are the fractions used now, 0..1.
	FiveHour, SevenDay float64
	// FiveHourReset and SevenDayReset are how long until each window
	// resets, from the call on Options.Clock; 0 means a whole window
	// (five hours, seven days). After a reset the next one is a whole
	// window later, as upstream.
	FiveHourReset, SevenDayReset time.Duration
	// PerFiveHour and PerSevenDay are what one answer adds to each window.
	// A window never reports more than all of it.
	PerFiveHour, PerSevenDay float64
}

// SetWindows makes credential report w on every answer (see
// SetUtilization for the headers), growing with every successful answer.
// It only reports: a full window refuses nothing by itself.
func (s *Server) SetWindows(credential string, w Windows) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	whole := func(d, span time.Duration) time.Time {
		if d <= 0 {
			d = span
		}
		return now.Add(d)
	}
	cs := s.credLocked(credential)
	cs.util = &utilization{
		fiveHour: clamp01(w.FiveHour), sevenDay: clamp01(w.SevenDay),
		fiveHourReset: whole(w.FiveHourReset, fiveHours), sevenDayReset: whole(w.SevenDayReset, sevenDays),
	}
	cs.growth = growth{fiveHour: w.PerFiveHour, sevenDay: w.PerSevenDay}
}

// growth is what one answer adds to a credential's windows.
type growth struct{ fiveHour, sevenDay float64 }

// spend charges one answer to credential's windows. It runs before the
// answer's headers are written, so the answer reports itself.
func (s *Server) spend(credential string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.creds[credential]
	if cs == nil || cs.util == nil || cs.growth == (growth{}) {
		return
	}
	cs.util.roll(s.clk.Now())
	cs.util.fiveHour = clamp01(cs.util.fiveHour + cs.growth.fiveHour)
	cs.util.sevenDay = clamp01(cs.util.sevenDay + cs.growth.sevenDay)
}

// clamp01 keeps f a fraction, rounded as upstream writes it ("0.72"), so
// repeated additions do not report 0.7000000000000001.
func clamp01(f float64) float64 { return max(0, min(1, math.Round(f*1e4)/1e4)) }
