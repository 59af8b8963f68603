package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// The panel holds still under the mouse (issue 42): what a state change
// shows or hides sits in a slot that keeps its size either way, so no
// button moves when a row starts or stops cooling.

// reserved lays its objects over each other in a room of at least min,
// measured when the slot was made, with every object shown: showing one and
// hiding another leaves everything around the slot where it was. (A widget
// hidden before it was ever drawn can measure smaller than it draws.)
type reserved struct{ min fyne.Size }

func (l *reserved) MinSize(objs []fyne.CanvasObject) fyne.Size {
	s := l.min
	for _, o := range objs {
		if o.Visible() {
			s = s.Max(o.MinSize())
		}
	}
	return s
}

func (l *reserved) Layout(objs []fyne.CanvasObject, s fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.Position{})
		o.Resize(s)
	}
}

// slot is a reserved container of objs, which must all be shown when it is
// made; hide them after.
func slot(objs ...fyne.CanvasObject) *fyne.Container {
	l := &reserved{}
	for _, o := range objs {
		l.min = l.min.Max(o.MinSize())
	}
	return container.New(l, objs...)
}

// buttonSlot is a slot for b that fits it with any of texts.
func buttonSlot(b *widget.Button, texts ...string) *fyne.Container {
	c := slot(b)
	l := c.Layout.(*reserved)
	was := b.Text
	for _, t := range texts {
		b.SetText(t)
		l.min = l.min.Max(b.MinSize())
	}
	b.SetText(was)
	return c
}
