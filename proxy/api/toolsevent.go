package api

// The reasons of the credential_updated event sent when a person opens a
// subscription login to every tool (`subpool tools ID all`, [subscriptions]
// other_tools, the tray) or keeps it for its own tool again: the tray reads
// them to update the row, `subpool events` prints them.
const (
	ReasonOtherToolsOn  = "serves every tool"
	ReasonOtherToolsOff = "serves its own tool only"
)
