// Package jsonscan holds the engine's two hand-written JSON readers, each
// checked against encoding/json by a fuzz test: Scan reads the few fields
// of a request body that routing needs without decoding the conversation
// around them, and RenameModel names an alias in an answer's "model"
// fields without re-encoding the answer. Both take any bytes: a body that
// is not JSON is the upstream's to judge, so a reader never fails on it,
// it only stops reading.
package jsonscan
