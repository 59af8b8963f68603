package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// The panel holds still under the mouse (issue 42): what a state change
// shows or hides sits in a slot that keeps its size either way, so no
// button moves when a row starts or stops cooling.

// reserved lays its objects over each other in the room the largest of
// them needs, hidden ones included: showing one and hiding another leaves
// everything around the slot where it was.
type reserved struct{}

func (reserved) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for _, o := range objs {
		s = s.Max(o.MinSize())
	}
	return s
}

func (reserved) Layout(objs []fyne.CanvasObject, s fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.Position{})
		o.Resize(s)
	}
}

// slot is a reserved container of objs.
func slot(objs ...fyne.CanvasObject) *fyne.Container { return container.New(reserved{}, objs...) }

// oneLine is a label that never wraps nor widens the window: what does not
// fit ends in an ellipsis.
func oneLine(imp widget.Importance) *widget.Label {
	l := widget.NewLabel("")
	l.Truncation = fyne.TextTruncateEllipsis
	l.Importance = imp
	return l
}
