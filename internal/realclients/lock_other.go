//go:build !unix

package realclients

import "errors"

func lock(string) (func(), error) {
	return nil, errors.New("the real-client suite runs on Linux and macOS only")
}
