package main

import (
	"os"
	"strconv"
	"time"
)

func sourceDate() time.Time {
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
}
