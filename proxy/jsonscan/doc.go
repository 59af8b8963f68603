// Package jsonscan holds the engine's two hand-written JSON readers, each
// checked against encoding/json by a fuzz test: Scan reads the few fields
// of a request body that routing needs without decoding the conversation
// around them, and RenameModel names an alias in an answer's "model"
// fields without re-encoding the answer. Both take any bytes and never
// fail on them, they only stop reading; Scan says in Fields.Flaw when what
// it read may not be what the upstream will (a duplicate, a byte-order
// mark, a model of the wrong type, a body it could not walk), and the
// proxy refuses such a body where its model decides anything.
package jsonscan
