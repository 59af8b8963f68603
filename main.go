// Command subpool pools AI subscriptions and API keys behind one local
// endpoint. All the work is in package app; fyne package wants main here.
package main

import (
	"os"

	"github.com/subpool/subpool/app"
)

func main() { app.Main(os.Args) }
