// Command nootel is a program that takes a lock on the memory driver and
// does not import package lockotel: the module's test builds it and checks
// with go version -m that it links no OpenTelemetry.
package main

import (
	"context"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

func main() {
	m, err := lock.Open(lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	_ = m.Try(context.Background(), "k", time.Second, func(context.Context) error { return nil })
}
