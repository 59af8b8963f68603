package daemon

// mode is what a Daemon was made for. The three differ in what they own
// and what they serve; each difference asks the mode, not whether some
// field happens to be nil.
type mode int

const (
	// serving is Start over a home: it serves, keeps the home's files and
	// reads config.toml again when it changes.
	serving mode = iota
	// demo is Start with Options.Config: it serves and keeps nothing of a
	// home. Its keys are in memory, its history (if any) in a folder of
	// its own, and it has no config file to read again.
	demo
	// inPlace is Open, for a CLI verb when no proxy answers: the home's
	// Backend under its lock, serving nothing.
	inPlace
)

// mode is the mode Start gives o: a Config of its own is the demo's.
func (o Options) mode() mode {
	if o.Config != nil {
		return demo
	}
	return serving
}

// ownsHome says the home's lock, keychain, files and client keys are
// this daemon's.
func (m mode) ownsHome() bool { return m != demo }

// reloads says config.toml is read again on an edit, SIGHUP or the admin
// API (a home opened in place reads it when its proxy starts).
func (m mode) reloads() bool { return m == serving }
