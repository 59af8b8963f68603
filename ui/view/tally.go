package view

import "fmt"

// Tally counts rows by their badge. It is the one count of the panel: the
// window title, each section's header and the tray's summary all read it,
// and a row is counted under the word its badge shows, so the three cannot
// disagree (issue 42: the title said "4 cooling" while the sections called
// the same credentials ready, and a badge said "limited").
type Tally struct {
	Ready   int // badge "ready": serves every model
	Limited int // badge "limited": serves, but a model of it cools down
	Cooling int
	Held    int // badge "reserve": held back for the person's own use
	Login   int
	Payment int
	Parked  int
	Paused  int
	Total   int
}

// BadgeWords are every word a row's badge can show, so the panel can give
// the badge the room of the widest and keep the label beside it still.
var BadgeWords = []string{badgeReady, badgeLimited, badgeCooling, badgeReserve, badgeLogin, badgePayment, badgeParked, badgePaused}

// TallyRows counts rows by badge.
func TallyRows(rows []Row) Tally {
	var t Tally
	for _, r := range rows {
		t.Total++
		switch r.Badge.Text {
		case badgeReady:
			t.Ready++
		case badgeLimited:
			t.Limited++
		case badgeCooling:
			t.Cooling++
		case badgeReserve:
			t.Held++
		case badgeLogin:
			t.Login++
		case badgePayment:
			t.Payment++
		case badgeParked:
			t.Parked++
		case badgePaused:
			t.Paused++
		}
	}
	return t
}

// Plus is the tally of both.
func (t Tally) Plus(o Tally) Tally {
	return Tally{t.Ready + o.Ready, t.Limited + o.Limited, t.Cooling + o.Cooling, t.Held + o.Held,
		t.Login + o.Login, t.Payment + o.Payment, t.Parked + o.Parked, t.Paused + o.Paused, t.Total + o.Total}
}

// String is the title's summary: "3 ready · 1 limited · 1 needs a login".
func (t Tally) String() string {
	return joinNonEmpty(" · ",
		countWord(t.Ready, "ready"), countWord(t.Limited, "limited"), countWord(t.Cooling, "cooling"),
		countWord(t.Held, "held by reserve"), countWord(t.Login, "needs a login"), countWord(t.Payment, "payment"),
		countWord(t.Parked, "parked"), countWord(t.Paused, "paused"))
}

// SectionSummary is a section's header: "2 of 3 ready", and the limited
// beside them, which serve too.
func (t Tally) SectionSummary() string {
	return joinNonEmpty(" · ", fmt.Sprintf("%d of %d ready", t.Ready, t.Total), countWord(t.Limited, "limited"))
}

func countWord(n int, word string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s", n, word)
}
