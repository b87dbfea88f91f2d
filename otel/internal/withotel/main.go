// Command withotel is nootel with package lockotel: the module's test
// checks that go version -m sees OpenTelemetry in it, so that the check on
// nootel can fail.
package main

import (
	"context"
	"time"

	lockotel "github.com/zerotal/lock/otel"
	lock "github.com/zerotal/lock/sdk/go"
)

func main() {
	obs, err := lockotel.New()
	if err != nil {
		panic(err)
	}
	m, err := lock.OpenWith(lock.Config{}, lock.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	_ = m.Try(context.Background(), "k", time.Second, func(context.Context) error { return nil })
}
