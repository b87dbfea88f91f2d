package lockotel_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	lockotel "github.com/zerotal/lock/otel"
	lock "github.com/zerotal/lock/sdk/go"
)

// New gives a lock.Observer; WithObserver hands it to a Manager. Here the
// metrics go to an in-memory reader; in production, to the global
// MeterProvider and TracerProvider your exporters set up.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	obs, err := lockotel.New(lockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		panic(err)
	}
	m, err := lock.OpenWith(lock.Config{URL: "memory:"}, lock.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	_ = m.Try(context.Background(), "report", time.Minute, func(context.Context) error { return nil })

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, metric := range rm.ScopeMetrics[0].Metrics {
		if metric.Name == "lock.acquisitions" {
			p := metric.Data.(metricdata.Sum[int64]).DataPoints[0]
			outcome, _ := p.Attributes.Value(lockotel.AttrOutcome)
			fmt.Println(metric.Name, outcome.AsString(), p.Value)
		}
	}
	// Output: lock.acquisitions acquired 1
}
